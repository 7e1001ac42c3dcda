"""Check that the built documentation renders in a browser: typeset math, loaded figures.

Serves the HTML build on a local port, opens pages in headless Chromium and reads
back what a script injected into each page measured once the page, MathJax and its
fonts had loaded:

* MathJax ran from the build itself (its script is served by the local server, so
  the pages need no network) and typeset every math element of the page: each
  ``span.math`` / ``div.math`` holds an ``mjx-container``, and none holds a TeX error
  (``mjx-merror``);
* MathJax's web fonts loaded (a loaded ``MJX*`` font face);
* every image of the page loaded (``complete`` with ``naturalWidth > 0``), and a
  gallery page has at least one figure.

It also keeps a screenshot of each page (the gallery page as ``screenshot.png``)
beside the build. Usage::

    python doc/check_render.py [--build doc/_build/html] [--chromium /usr/bin/chromium]

Exits with status 1 and says what failed when a page does not render.
"""

import argparse
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

PAGES = [
    # (page, what it must show, screenshot file name beside the build directory)
    ("index.html", {"math": True, "figures": False}, "screenshot-index.png"),
    ("user_guide/ksd.html", {"math": True, "figures": False}, None),
    ("auto_examples/plot_ksd_bandwidth.html", {"math": True, "figures": True},
     "screenshot.png"),
]

# Runs in the page after it loaded: waits for MathJax's typesetting and the fonts,
# measures, and writes the measurements as JSON into a hidden element that
# ``--dump-dom`` returns with the rest of the page.
PROBE = """
<script>
(function () {
  function report(result) {
    var out = document.createElement("pre");
    out.id = "render-check";
    out.hidden = true;
    out.textContent = JSON.stringify(result);
    document.body.appendChild(out);
  }
  function measure(error) {
    var maths = Array.prototype.slice.call(document.querySelectorAll("span.math, div.math"));
    var typeset = maths.filter(function (m) { return m.querySelector("mjx-container"); });
    var images = Array.prototype.slice.call(document.images);
    var broken = images.filter(function (i) { return !(i.complete && i.naturalWidth > 0); });
    var figures = images.filter(function (i) { return /sphx_glr_.*_\\d+\\.png/.test(i.src); });
    var script = document.querySelector("script[src*='mathjax']");
    var fonts = [];
    if (document.fonts) {
      document.fonts.forEach(function (f) {
        if (f.status === "loaded" && /MJX/.test(f.family)) { fonts.push(f.family); }
      });
    }
    report({
      error: error || null,
      mathjax_version: (window.MathJax && window.MathJax.version) || null,
      mathjax_src: script ? script.src : null,
      origin: window.location.origin,
      math_elements: maths.length,
      typeset: typeset.length,
      mjx_containers: document.querySelectorAll("mjx-container").length,
      tex_errors: document.querySelectorAll("mjx-merror").length,
      mjx_fonts: fonts.length,
      images: images.length,
      broken_images: broken.map(function (i) { return i.getAttribute("src"); }),
      figures: figures.length,
      figure_widths: figures.map(function (i) { return i.naturalWidth; })
    });
  }
  window.addEventListener("load", function () {
    var mj = window.MathJax;
    var ready = (mj && mj.startup && mj.startup.promise) ? mj.startup.promise
                                                           : Promise.resolve();
    ready.then(function () { return document.fonts ? document.fonts.ready : null; })
         .then(function () { measure(null); },
               function (e) { measure(String(e)); });
  });
})();
</script>
"""


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the build; HTML pages get the probe script before ``</body>``."""

    def do_GET(self):
        path = self.translate_path(self.path.split("?", 1)[0])
        if not path.endswith(".html") or not os.path.isfile(path):
            return super().do_GET()
        with open(path, "rb") as fh:
            body = fh.read().replace(b"</body>", PROBE.encode() + b"</body>", 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # keep the output to the verdicts
        pass


def _chromium(binary, profile, *args):
    return [binary, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
            "--disable-background-networking", "--disable-component-update",
            "--hide-scrollbars", f"--user-data-dir={profile}", *args]


def probe(binary, url, budget_ms, profile, attempts=3):
    """The measurements of the probe on ``url``, or raise RuntimeError.

    A browser that starts slowly on a loaded machine can end before the page has
    reported; such a run is repeated (``attempts`` in all). A page that renders
    badly still reports, and is judged by :func:`verdict`.
    """
    cmd = _chromium(binary, profile, f"--virtual-time-budget={budget_ms}", "--dump-dom", url)
    for _ in range(attempts):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
        match = re.search(r'<pre id="render-check" hidden="">(.*?)</pre>', proc.stdout, re.S)
        if match:
            break
    else:
        raise RuntimeError(f"the probe did not report on {url} in {attempts} attempts "
                           f"(chromium exit status {proc.returncode}; stderr: "
                           f"{proc.stderr.strip()[-500:]!r})")
    text = (match.group(1).replace("&lt;", "<").replace("&gt;", ">")
            .replace("&quot;", '"').replace("&amp;", "&"))
    return json.loads(text)


def screenshot(binary, url, path, budget_ms, profile):
    cmd = _chromium(binary, profile, f"--virtual-time-budget={budget_ms}",
                    "--window-size=1280,2600", f"--screenshot={path}", url)
    subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    return os.path.isfile(path) and os.path.getsize(path) > 0


def verdict(page, needs, m):
    """The list of problems of one page's measurements (empty when it renders)."""
    problems = []
    if m["error"]:
        problems.append(f"MathJax failed: {m['error']}")
    if needs["math"]:
        if not m["mathjax_version"]:
            problems.append("MathJax did not load")
        elif not (m["mathjax_src"] or "").startswith(m["origin"] + "/"):
            problems.append(f"MathJax was not served by the build: {m['mathjax_src']}")
        if m["math_elements"] == 0:
            problems.append("no math on the page")
        if m["typeset"] < m["math_elements"]:
            problems.append(f"{m['math_elements'] - m['typeset']} of {m['math_elements']} "
                            "math elements were not typeset")
        if m["tex_errors"]:
            problems.append(f"{m['tex_errors']} TeX errors")
        if m["mjx_fonts"] == 0:
            problems.append("no MathJax font loaded")
    if m["broken_images"]:
        problems.append(f"images not loaded: {m['broken_images']}")
    if needs["figures"] and m["figures"] == 0:
        problems.append("no gallery figure on the page")
    return problems


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(here, "_build", "html"),
                        help="the HTML build directory")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--budget-ms", type=int, default=20000,
                        help="virtual time each page gets to load and typeset")
    args = parser.parse_args(argv)
    build = os.path.abspath(args.build)
    if not os.path.isfile(os.path.join(build, "index.html")):
        print(f"no build at {build}: run python -m sphinx -b html doc doc/_build/html first")
        return 1
    if not os.path.exists(args.chromium):
        print(f"chromium not found at {args.chromium} (apt-get install chromium)")
        return 1
    handler = functools.partial(_Handler, directory=build)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    failed = False
    try:
        with tempfile.TemporaryDirectory() as profile:
            for page, needs, shot in PAGES:
                url = f"{origin}/{page}"
                try:
                    m = probe(args.chromium, url, args.budget_ms, profile)
                except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
                    print(f"FAIL {page}: {exc}")
                    failed = True
                    continue
                problems = verdict(page, needs, m)
                print(f"{'FAIL' if problems else 'ok  '} {page}: MathJax "
                      f"{m['mathjax_version']}, {m['typeset']}/{m['math_elements']} math "
                      f"elements typeset ({m['mjx_containers']} mjx-container, "
                      f"{m['mjx_fonts']} MathJax fonts), {m['images'] - len(m['broken_images'])}"
                      f"/{m['images']} images loaded, {m['figures']} gallery figures "
                      f"(widths {m['figure_widths']})")
                for p in problems:
                    print(f"     {p}")
                failed |= bool(problems)
                if shot:
                    path = os.path.join(os.path.dirname(build), shot)
                    if screenshot(args.chromium, url, path, args.budget_ms, profile):
                        print(f"     screenshot: {path}")
                    else:
                        print(f"FAIL {page}: no screenshot written")
                        failed = True
    finally:
        server.shutdown()
        server.server_close()
    print("render check " + ("FAILED" if failed else "passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
