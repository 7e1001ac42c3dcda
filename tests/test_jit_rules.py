"""Rules on how the compiled kernels call each other (``skstein._numba._jit``).

A kernel compiled without numba's threads must not call, directly or through other
kernels, one compiled with them: numba's cache does not keep such a call whole, and a
later process that loads the caller from the cache can crash (the median of
``svgd_field_serial`` did). The call graph is read from the source: calls by name,
resolved within the module or through its ``from ... import`` lines.
"""

import ast
import pathlib

import skstein

PACKAGE = pathlib.Path(skstein.__file__).parent


def _jit_flags(node):
    """None for a plain function, else whether its ``@njit``/``@jit`` asks for threads."""
    for dec in node.decorator_list:
        call = dec if isinstance(dec, ast.Call) else None
        target = call.func if call else dec
        name = getattr(target, "id", getattr(target, "attr", None))
        if name not in ("njit", "jit"):
            continue
        parallel = False
        for kw in call.keywords if call else ():
            if kw.arg == "parallel":
                parallel = not (isinstance(kw.value, ast.Constant) and not kw.value.value)
        return parallel
    return None


def _module_name(path):
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph():
    """``{(module, name): (parallel, {(module, callee), ...})}`` of the jitted functions."""
    kernels, imports = {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        tree = ast.parse(path.read_text())
        names = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level:
                base = module.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[:len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    names[alias.asname or alias.name] = (source, alias.name)
        imports[module] = names
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                parallel = _jit_flags(node)
                if parallel is not None:
                    calls = {n.func.id for n in ast.walk(node)
                             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
                    kernels[(module, node.name)] = (parallel, calls)
    graph = {}
    for (module, name), (parallel, calls) in kernels.items():
        callees = set()
        for call in calls:
            key = imports[module].get(call, (module, call))
            if key in kernels:
                callees.add(key)
        graph[(module, name)] = (parallel, callees)
    return graph


def test_the_graph_sees_the_kernels():
    graph = _graph()
    assert len(graph) > 100
    # a known parallel kernel and a serial one, and a call resolved through an import
    assert graph[("skstein._numba.svgd", "svgd_field")][0]
    assert not graph[("skstein._numba.svgd", "svgd_field_serial")][0]
    assert ("skstein._numba.select", "select_pair") in \
        graph[("skstein._numba.svgd", "_median_upper_direct")][1]


def _serial_to_parallel(graph):
    """The calls, direct or through other kernels, from a serial kernel to a parallel one."""
    bad = []
    for key, (parallel, _) in graph.items():
        if parallel:
            continue
        stack, seen = [key], {key}
        while stack:
            for callee in graph[stack.pop()][1]:
                if callee in seen:
                    continue
                seen.add(callee)
                if graph[callee][0]:
                    bad.append(f"{key[0]}.{key[1]} -> {callee[0]}.{callee[1]}")
                stack.append(callee)
    return sorted(bad)


def test_the_check_finds_indirect_calls():
    graph = {("m", "outer"): (False, {("m", "middle")}),
             ("m", "middle"): (False, {("n", "inner")}),
             ("n", "inner"): (True, {("n", "row")}),
             ("n", "row"): (False, set()),
             ("n", "other"): (True, {("n", "inner")})}
    assert _serial_to_parallel(graph) == ["m.middle -> n.inner", "m.outer -> n.inner"]


def test_no_serial_kernel_reaches_a_parallel_one():
    bad = _serial_to_parallel(_graph())
    assert not bad, "serial kernels that call parallel ones: " + "; ".join(bad)
