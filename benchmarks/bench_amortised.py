"""Time of one amortised S-SVGD training step against one vanilla VAE step.

The setting of ``skstein reproduce vae-digits`` (Gong et al. 2021, Algorithm 3): a
batch of 100 binarised digits, 50 latent samples per image, latent dimension 64,
the experiment's networks (two ReLU hidden layers of 100 units). A step is the
whole update: encoder and decoder passes, the posterior score, the (sliced) SVGD
field of :meth:`skstein.SlicedSVGD.direction` with its direction update, backward
passes and Adam. The VAE step draws the same 50 samples per image (its ELBO is
averaged over them), so both steps push the same 5000 rows through the decoder.
Amortised SVGD and the field alone are timed too, and the floor of any amortised step:
the same step with a zero field (``no field``: the implicit encoder's passes over the
5000 rows, the decoder's pass, Adam), which a field of any cost adds to. After one
warm-up step of each (compilation), the methods take turns in rounds, so that a change
in the machine's load during the run falls on all of them alike: in each round each
method takes 4 steps in a row, the first untimed (back-to-back steps, as in training,
find their data in the caches), and the round's time is the median of the other 3.
Times are medians over ``--repeats`` rounds; a ratio is the median of the rounds'
ratios.

Run: ``python benchmarks/bench_amortised.py [--latent 64] [--batch 100] [--samples 50]
[--repeats 10] [--threads 1]``. The issue's target is an S-SVGD step of at most 2 VAE
steps; since the floor alone takes 1.6-1.75 of them (the implicit encoder's passes over
the 5000 rows), the script also prints the time that target leaves for the field and
the ratio to an amortised SVGD step (which has the same floor), whose proposed target
is at most 2.
"""

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from skstein.experiments import amortised_vae as av
from skstein.experiments._mlp import Adam, mlp_forward


def _time_rounds(fns, rounds, block=4):
    """Per-name step times (seconds) over ``rounds`` rounds. In each round every
    function of ``fns`` runs ``block`` times in a row, the first call untimed (it
    brings the function's data back into the caches, as in a training loop where the
    same step repeats), the others timed; the round's time is their median."""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            fn()
            block_times = []
            for _ in range(block - 1):
                t0 = time.perf_counter()
                fn()
                block_times.append(time.perf_counter() - t0)
            times[name].append(np.median(block_times))
    return {name: np.array(t) for name, t in times.items()}


class _ZeroField:
    """A sampler whose field is zero: the step around the field, alone. It evaluates
    the score (the decoder's pass, which the step's decoder update reuses)."""

    def direction(self, Z, score):
        score(Z)
        return np.zeros_like(Z)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latent", type=int, default=64)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=10,
                        help="rounds (default 10)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS and numba threads (default 1)")
    args = parser.parse_args(argv)

    import numba

    rng = np.random.default_rng(0)
    data = av.load_data()
    grey = data["train"][:args.batch]
    X = (rng.random(grey.shape) < grey).astype(float)
    D, n = args.latent, args.samples
    fns = {}
    old = numba.get_num_threads()
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    try:
        with threadpool_limits(args.threads):
            for method in av.METHODS:
                model = av.Model(method, D, rng)
                opt = Adam(model.encoder + model.decoder, learning_rate=av.LEARNING_RATE)
                sampler = None if method == "vae" else av._sampler(method, 0)
                fns[method] = (lambda m=model, o=opt, s=sampler:
                               av.train_step(m, o, s, X, n, rng))
                if sampler is not None:
                    noise = rng.standard_normal((X.shape[0], n, D))
                    Z = mlp_forward(model.encoder, av._with_noise(X, noise))[0].reshape(
                        X.shape[0], n, D)
                    score = av.posterior_score(model.decoder, X)
                    fns[method + " field"] = (lambda s=sampler, Z=Z, sc=score:
                                              s.direction(Z, sc))
            model = av.Model("svgd", D, rng)
            opt = Adam(model.encoder + model.decoder, learning_rate=av.LEARNING_RATE)
            fns["no field"] = (lambda m=model, o=opt: av.train_step(m, o, _ZeroField(), X, n,
                                                                    rng))
            times = _time_rounds(fns, args.repeats)
    finally:
        numba.set_num_threads(old)
    results = {name: float(np.median(t)) for name, t in times.items()}
    print(f"one training step: batch {args.batch}, {n} latent samples, latent dim {D}, "
          f"{args.threads} thread(s); median of {args.repeats}")
    for name, sec in results.items():
        print(f"  {name:<20s} {1e3 * sec:8.1f} ms")
    for method, label in (("sliced-svgd", "S-SVGD"), ("svgd", "SVGD"), ("no field", "floor")):
        ratios = times[method] / times["vae"]
        q1, q3 = np.percentile(ratios, [25, 75])
        print(f"amortised {label:<6s} / VAE step: {np.median(ratios):.2f}x "
              f"(quartiles of the rounds {q1:.2f}-{q3:.2f})"
              + (" (target <= 2)" if method == "sliced-svgd" else ""))
    ratios = times["sliced-svgd"] / times["svgd"]
    q1, q3 = np.percentile(ratios, [25, 75])
    print(f"amortised S-SVGD / amortised SVGD step: {np.median(ratios):.2f}x (quartiles of "
          f"the rounds {q1:.2f}-{q3:.2f}) (proposed target <= 2)")
    left = 2.0 * results["vae"] - results["no field"]
    print(f"a step of 2x the VAE's leaves {1e3 * left:.1f} ms for the field beyond the "
          f"floor (\"field\" rows: with the score's decoder pass, which the floor holds)")
    return results


if __name__ == "__main__":
    main()
