"""Random-state helpers.

Every public entry point takes ``random_state`` and turns it into a local
:class:`numpy.random.Generator` with :func:`as_generator`; the estimator never
stores the generator back. Independent streams (data, bootstrap, directions,
particles, trials) come from :func:`spawn_seeds`, so results do not depend on the
order in which streams are consumed or on the number of workers.
"""

import numbers

import numpy as np

__all__ = ["as_generator", "spawn_seeds"]


def as_generator(random_state):
    """Return a :class:`numpy.random.Generator` for ``random_state``.

    Parameters
    ----------
    random_state : None, int, numpy.random.SeedSequence, numpy.random.Generator \
            or numpy.random.RandomState
        ``None`` gives fresh OS entropy; an int or a ``SeedSequence`` seeds a new
        PCG64 generator; a ``Generator`` is used as it is (and advanced); a legacy
        ``RandomState`` is used to draw the seed of a new generator.
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}.")
        return np.random.default_rng(int(random_state))
    raise TypeError(
        "random_state must be None, a non-negative int, a numpy SeedSequence, Generator "
        f"or RandomState; got {type(random_state).__name__}."
    )


def spawn_seeds(random_state, n):
    """Spawn ``n`` independent child seeds (as ints) from ``random_state``.

    Child ``k`` is the ``k``-th child that :meth:`numpy.random.SeedSequence.spawn`
    gives a fresh root, so it is the same however many children are consumed or in
    which process. A ``SeedSequence`` root is not advanced: spawning from it again
    gives the same seeds (``spawn`` itself would continue where the last call
    stopped), so several runs from one root see the same trials.
    """
    if isinstance(random_state, np.random.SeedSequence):
        root = random_state
    else:
        rng = as_generator(random_state)
        root = np.random.SeedSequence(int(rng.integers(0, 2**63 - 1)))
    children = (np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (k,),
                                       pool_size=root.pool_size) for k in range(n))
    return [int(child.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
            for child in children]
