"""Time of one amortised S-SVGD training step against one vanilla VAE step.

The setting of ``skstein reproduce vae-digits`` (Gong et al. 2021, Algorithm 3): a
batch of 100 binarised digits, 50 latent samples per image, latent dimension 64,
the experiment's networks (two ReLU hidden layers of 100 units). A step is the
whole update: encoder and decoder passes, the posterior score, the (sliced) SVGD
field of :meth:`skstein.SlicedSVGD.direction` with its direction update, backward
passes and Adam. The VAE step draws the same 50 samples per image (its ELBO is
averaged over them), so both steps push the same 5000 rows through the decoder.
Amortised SVGD and the field alone are timed too. Times are medians over
``--repeats`` steps after one warm-up step (compilation), all in the same run.

Run: ``python benchmarks/bench_amortised.py [--latent 64] [--batch 100] [--samples 50]
[--repeats 20] [--threads 1]``. The target is a ratio of at most 2.
"""

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from skstein.experiments import amortised_vae as av
from skstein.experiments._mlp import Adam, mlp_forward


def _time(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latent", type=int, default=64)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS and numba threads (default 1)")
    args = parser.parse_args(argv)

    import numba

    rng = np.random.default_rng(0)
    data = av.load_data()
    grey = data["train"][:args.batch]
    X = (rng.random(grey.shape) < grey).astype(float)
    D, n = args.latent, args.samples
    results = {}
    old = numba.get_num_threads()
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    try:
        with threadpool_limits(args.threads):
            for method in av.METHODS:
                model = av.Model(method, D, rng)
                opt = Adam(model.encoder + model.decoder, learning_rate=av.LEARNING_RATE)
                sampler = None if method == "vae" else av._sampler(method, 0)
                results[method] = _time(lambda: av.train_step(model, opt, sampler, X, n, rng),
                                        args.repeats)
                if sampler is not None:
                    noise = rng.standard_normal((X.shape[0], n, D))
                    Z = mlp_forward(model.encoder, av._with_noise(X, noise))[0].reshape(
                        X.shape[0], n, D)
                    score = av.posterior_score(model.decoder, X)
                    results[method + " field"] = _time(lambda: sampler.direction(Z, score),
                                                       args.repeats)
    finally:
        numba.set_num_threads(old)
    print(f"one training step: batch {args.batch}, {n} latent samples, latent dim {D}, "
          f"{args.threads} thread(s); median of {args.repeats}")
    for name, sec in results.items():
        print(f"  {name:<20s} {1e3 * sec:8.1f} ms")
    ratio = results["sliced-svgd"] / results["vae"]
    print(f"amortised S-SVGD / VAE step: {ratio:.2f}x (target <= 2)")
    print(f"amortised SVGD / VAE step:   {results['svgd'] / results['vae']:.2f}x")
    return results


if __name__ == "__main__":
    main()
