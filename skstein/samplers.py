r"""MCMC samplers for the posteriors of latent-variable models.

The samplers run one independent chain per row of the state ``Z`` (one chain per
data point ``x_i``, targeting :math:`\pi_i(z) = p(z | x_i)`), all rows advanced
together: a step costs one vectorised gradient evaluation for the whole sample.
A *target* is a callable ``Z -> (logpi, grad)`` returning the (unnormalised) log
density of each row, shape ``(n,)``, and its gradient in ``z``, shape ``(n, d)``;
a latent-variable model builds it for its data (see
:meth:`skstein.distributions.PPCA.posterior_target`). :class:`SGHMC`, which needs
only the gradient, also takes a distribution with ``grad_logpdf``; its chains
are independent rows too (e.g. many chains on one target).

All random numbers are drawn in NumPy from ``random_state``; the accept/reject
passes run in numba (:mod:`skstein._numba.samplers`), so chains do not depend on
the number of threads.
"""

import numbers

import numpy as np

from ._numba.samplers import hmc_accept, mala_accept, sghmc_update, sghmc_update_parallel
from ._progress import check_verbose, progress_bar
from ._random import as_generator
from ._validation import check_positive_float, check_positive_int, sklearn_model_hint

__all__ = ["MALA", "HMC", "SGHMC", "initial_state"]


def initial_state(init, n, dim, random_state=None):
    """Starting states ``(n, dim)`` of ``n`` chains.

    Parameters
    ----------
    init : None, "zeros", float or array-like of shape (dim,) or (n, dim)
        ``None``: standard normal draws (the prior of models with
        :math:`z \\sim N(0, I)`); ``"zeros"``; a float fills every coordinate (a
        deliberately biased start); an array is broadcast to ``(n, dim)``.
    n, dim : int
    random_state : None, int or Generator
        Only used for ``init=None``.
    """
    if init is None:
        return as_generator(random_state).standard_normal((n, dim))
    if isinstance(init, str):
        if init != "zeros":
            raise ValueError(f"init must be None, 'zeros', a float or an array; got {init!r}.")
        return np.zeros((n, dim))
    Z0 = np.asarray(init, dtype=np.float64)
    try:
        Z0 = np.broadcast_to(Z0, (n, dim)).copy()
    except ValueError:
        raise ValueError(
            f"init of shape {Z0.shape} cannot be broadcast to the ({n}, {dim}) chain states."
        ) from None
    if not np.all(np.isfinite(Z0)):
        raise ValueError("init must be finite.")
    return Z0


def _check_init(init):
    if init is None or isinstance(init, (str, numbers.Real, np.ndarray, list, tuple)):
        return
    raise TypeError(f"init must be None, 'zeros', a float or an array; got {type(init).__name__}.")


def _evaluate(target, Z):
    lp, G = target(Z)
    lp = np.asarray(lp, dtype=np.float64).reshape(Z.shape[0])
    G = np.ascontiguousarray(G, dtype=np.float64)
    if G.shape != Z.shape:
        raise ValueError(
            f"the target returned a gradient of shape {G.shape} for states {Z.shape}.")
    return lp, G


class _Sampler:
    """Shared chain loop: ``_step`` advances all chains once."""

    def sample(self, target, Z0, n_samples, *, burn_in=0, random_state=None,
               return_acceptance=False, verbose=0):
        """Run the chains and return their states after ``burn_in`` steps.

        Parameters
        ----------
        target : callable
            ``Z -> (log density (n,), gradient (n, d))``.
        Z0 : array-like of shape (n, d)
            Starting states, one row per chain.
        n_samples : int
            Number of states kept per chain (one per step after the burn-in).
        burn_in : int, default=0
            Steps discarded first.
        random_state : None, int or Generator
        return_acceptance : bool, default=False
            Also return the acceptance rate of each chain.
        verbose : int, bool or "auto", default=0
            A progress bar over the steps, with the time left, on standard error
            (``"auto"``: only when it is a terminal). The draws do not depend on it.

        Returns
        -------
        draws : ndarray of shape (n_samples, n, d)
            ``draws[t]`` is the state of all chains after ``burn_in + t + 1`` steps.
        acceptance : ndarray of shape (n,)
            Only with ``return_acceptance``.
        """
        self._check_params()
        n_samples = check_positive_int(n_samples, "n_samples")
        burn_in = check_positive_int(burn_in, "burn_in", minimum=0)
        verbose = check_verbose(verbose)
        rng = as_generator(random_state)
        Z = np.array(Z0, dtype=np.float64, copy=True, order="C")
        if Z.ndim != 2 or not np.all(np.isfinite(Z)):
            raise ValueError(
                f"Z0 must be a finite 2-D array (n_chains, dim), got shape {Z.shape}.")
        lp, G = _evaluate(target, Z)
        accepted = np.zeros(Z.shape[0], dtype=np.int64)
        out = np.empty((n_samples,) + Z.shape)
        with progress_bar(burn_in + n_samples, verbose=verbose, desc=type(self).__name__,
                          unit="step") as bar:
            for t in range(burn_in + n_samples):
                lp, G = self._step(target, Z, lp, G, rng, accepted)
                if t >= burn_in:
                    out[t - burn_in] = Z
                bar.update(1)
        if return_acceptance:
            return out, accepted / float(burn_in + n_samples)
        return out


class MALA(_Sampler):
    r"""Metropolis-adjusted Langevin algorithm, one chain per row.

    Proposal :math:`z' = z + \tfrac{\epsilon^2}{2}\nabla\log\pi(z) + \epsilon\xi`,
    :math:`\xi \sim N(0, I)`, accepted with the Metropolis-Hastings probability.

    Parameters
    ----------
    step_size : float, default=0.1
        :math:`\epsilon`, the standard deviation of the proposal noise. It should be
        of the order of the smallest posterior standard deviation (times
        :math:`d^{-1/6}`); much smaller steps mix slowly, much larger ones are
        rarely accepted.
    init : None, "zeros", float or array-like, default=None
        Where a latent-variable model starts the chains (see :func:`initial_state`);
        ``None`` draws from the standard normal prior.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein.samplers import MALA
    >>> target = lambda Z: (-0.5 * np.sum(Z**2, axis=1), -Z)   # N(0, I) in each row
    >>> draws = MALA(step_size=0.8).sample(target, np.zeros((500, 2)), 200, random_state=0)
    >>> draws.shape
    (200, 500, 2)
    >>> bool(abs(draws[-1].var() - 1) < 0.2)
    True
    """

    def __init__(self, step_size=0.1, *, init=None):
        self.step_size = step_size
        self.init = init

    def _check_params(self):
        check_positive_float(self.step_size, "step_size")
        _check_init(self.init)

    def _step(self, target, Z, lp, G, rng, accepted):
        eps = float(self.step_size)
        Zp = Z + (0.5 * eps * eps) * G + eps * rng.standard_normal(Z.shape)
        lpp, Gp = _evaluate(target, Zp)
        logu = np.log(rng.random(Z.shape[0]))
        mala_accept(Z, G, lp, Zp, Gp, lpp, logu, eps, accepted)
        return lp, G

    def __repr__(self):
        return f"MALA(step_size={self.step_size!r}, init={self.init!r})"


class HMC(_Sampler):
    r"""Hamiltonian Monte Carlo with a leapfrog integrator, one chain per row.

    Each step draws a momentum :math:`p \sim N(0, I)`, runs ``n_steps`` leapfrog
    steps of size :math:`\epsilon` and accepts the end point with probability
    :math:`\min(1, e^{-\Delta H})`.

    Parameters
    ----------
    step_size : float, default=0.1
        Leapfrog step size :math:`\epsilon`.
    n_steps : int, default=10
        Leapfrog steps per transition.
    jitter : float in [0, 1), default=0.0
        Each transition of each chain uses the step size
        :math:`\epsilon\,U(1 - \text{jitter}, 1 + \text{jitter})`. With a fixed
        trajectory length :math:`\epsilon L` close to half a period of a Gaussian
        direction (:math:`\epsilon L \approx \pi\sqrt{\lambda}` for a posterior
        variance :math:`\lambda`), HMC only mirrors that coordinate and does not mix;
        a jitter of 0.1-0.3 breaks such resonances.
    init : None, "zeros", float or array-like, default=None
        Where a latent-variable model starts the chains (see :func:`initial_state`).
    """

    def __init__(self, step_size=0.1, n_steps=10, *, jitter=0.0, init=None):
        self.step_size = step_size
        self.n_steps = n_steps
        self.jitter = jitter
        self.init = init

    def _check_params(self):
        check_positive_float(self.step_size, "step_size")
        check_positive_int(self.n_steps, "n_steps")
        if isinstance(self.jitter, bool) or not isinstance(self.jitter, numbers.Real) \
                or not 0.0 <= self.jitter < 1.0:
            raise ValueError(f"jitter must be a float in [0, 1), got {self.jitter!r}.")
        _check_init(self.init)

    def _step(self, target, Z, lp, G, rng, accepted):
        eps = float(self.step_size)
        if self.jitter > 0:
            eps = eps * rng.uniform(1.0 - self.jitter, 1.0 + self.jitter, size=(Z.shape[0], 1))
        P0 = rng.standard_normal(Z.shape)
        P = P0 + 0.5 * eps * G
        Zp = Z.copy()
        for s in range(int(self.n_steps)):
            Zp += eps * P
            lpp, Gp = _evaluate(target, Zp)
            if s < self.n_steps - 1:
                P += eps * Gp
        P += 0.5 * eps * Gp
        logu = np.log(rng.random(Z.shape[0]))
        hmc_accept(Z, G, lp, Zp, Gp, lpp, P0, P, logu, accepted)
        return lp, G

    def __repr__(self):
        return (f"HMC(step_size={self.step_size!r}, n_steps={self.n_steps!r}, "
                f"jitter={self.jitter!r}, init={self.init!r})")


#: Below this many chain coordinates an SGHMC step runs serially (same numbers).
SGHMC_SERIAL_SIZE = 2**16


def _gradient_of(target):
    """``Z -> grad log pi(Z)`` from a distribution (``grad_logpdf``) or a target callable."""
    grad = getattr(target, "grad_logpdf", None)
    if callable(grad):
        return lambda Z: np.asarray(grad(Z), dtype=np.float64)
    if not callable(target):
        raise TypeError("target must be a callable Z -> (log density, gradient) or a "
                        f"distribution with grad_logpdf; got {type(target).__name__}."
                        + sklearn_model_hint(target, "target"))
    return lambda Z: _evaluate(target, Z)[1]


class SGHMC:
    r"""Stochastic gradient Hamiltonian Monte Carlo (Chen, Fox & Guestrin 2014), one chain per row.

    With unit mass, friction :math:`C`, step size :math:`\epsilon` and a noisy
    gradient :math:`\tilde g = \nabla\log\pi(z) + \sigma_g\xi` (the exact gradient
    plus simulated gradient noise, :math:`\xi \sim N(0, I)`), each step is

    .. math::

        v \leftarrow (1 - \epsilon C) v + \epsilon \tilde g
        + N\big(0, 2(C - \hat B)\epsilon\big), \qquad z \leftarrow z + \epsilon v,

    where :math:`\hat B` estimates the gradient noise's contribution
    :math:`\tfrac12\epsilon\sigma_g^2`. With :math:`\hat B = 0` (the common practice)
    the noise heats the chain: its stationary variance grows with
    :math:`\epsilon\sigma_g^2`, while small steps need many iterations to forget the
    start, so the step size trades bias against convergence. No Metropolis correction.

    Parameters
    ----------
    step_size : float, default=0.01
        :math:`\epsilon`.
    friction : float, default=1.0
        :math:`C` (must be at least :math:`\hat B` and :math:`\epsilon C \le 1`).
    gradient_noise : float, default=0.0
        :math:`\sigma_g`, the standard deviation of the simulated gradient noise (a
        stand-in for minibatch noise).
    noise_estimate : float or "exact", default=0.0
        :math:`\hat B`; ``"exact"`` is :math:`\tfrac12\epsilon\sigma_g^2`, which makes
        the injected and the gradient noise add up to :math:`2C\epsilon`.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein.samplers import SGHMC
    >>> target = lambda Z: (-0.5 * np.sum(Z**2, axis=1), -Z)   # N(0, I) in each row
    >>> draws = SGHMC(step_size=0.05).sample(target, np.zeros((400, 2)), 10, burn_in=500,
    ...                                      thin=20, random_state=0)
    >>> draws.shape
    (10, 400, 2)
    >>> bool(abs(draws.var() - 1) < 0.1)
    True
    """

    def __init__(self, step_size=0.01, friction=1.0, *, gradient_noise=0.0, noise_estimate=0.0):
        self.step_size = step_size
        self.friction = friction
        self.gradient_noise = gradient_noise
        self.noise_estimate = noise_estimate

    def _coefficients(self):
        eps = check_positive_float(self.step_size, "step_size")
        C = check_positive_float(self.friction, "friction")
        sg = self.gradient_noise
        if isinstance(sg, bool) or not isinstance(sg, numbers.Real) or not sg >= 0 \
                or not np.isfinite(sg):
            raise ValueError(f"gradient_noise must be a non-negative float, got {sg!r}.")
        sg = float(sg)
        B = self.noise_estimate
        if isinstance(B, str):
            if B != "exact":
                raise ValueError(f"noise_estimate must be a float >= 0 or 'exact', got {B!r}.")
            B = 0.5 * eps * sg * sg
        elif isinstance(B, bool) or not isinstance(B, numbers.Real) or not B >= 0 \
                or not np.isfinite(B):
            raise ValueError(f"noise_estimate must be a float >= 0 or 'exact', got {B!r}.")
        B = float(B)
        if B > C:
            raise ValueError(f"the noise estimate {B:g} exceeds the friction {C:g}: the "
                             "injected noise would have negative variance.")
        if eps * C > 1.0:
            raise ValueError(f"step_size * friction = {eps * C:g} > 1 reverses the momentum "
                             "every step; use a smaller step or friction.")
        return eps, C, sg, float(np.sqrt(2.0 * (C - B) * eps))

    def iterate(self, target, Z0, n_steps, *, random_state=None, momentum=None):
        """Run the chains; an iterator over copies of the states after every step.

        The arguments are checked when it is called; the chains advance as the
        iterator is consumed.

        Parameters
        ----------
        target : callable or distribution
            ``Z -> (log density, gradient)`` (the log density is not used) or an object
            with ``grad_logpdf(Z)``.
        Z0 : array-like of shape (n_chains, d)
        n_steps : int
        random_state : None, int or Generator
        momentum : array-like of shape (n_chains, d), default=None
            Initial momenta; ``None`` draws them from N(0, I).

        Returns
        -------
        iterator of ndarray of shape (n_chains, d)
        """
        eps, C, sg, si = self._coefficients()
        n_steps = check_positive_int(n_steps, "n_steps", minimum=0)
        rng = as_generator(random_state)
        Z = np.array(Z0, dtype=np.float64, copy=True, order="C")
        if Z.ndim != 2 or not np.all(np.isfinite(Z)):
            raise ValueError(
                f"Z0 must be a finite 2-D array (n_chains, dim), got shape {Z.shape}.")
        if momentum is None:
            V = rng.standard_normal(Z.shape)
        else:
            V = np.array(momentum, dtype=np.float64, copy=True, order="C")
            if V.shape != Z.shape or not np.all(np.isfinite(V)):
                raise ValueError(f"momentum must be finite with the shape of Z0 {Z.shape}.")
        grad = _gradient_of(target)
        return self._steps(grad, Z, V, n_steps, rng, eps, C, sg, si)

    @staticmethod
    def _steps(grad, Z, V, n_steps, rng, eps, C, sg, si):
        update = sghmc_update if Z.size < SGHMC_SERIAL_SIZE else sghmc_update_parallel
        unused = np.empty((1, 1))
        for _ in range(n_steps):
            G = np.ascontiguousarray(grad(Z), dtype=np.float64)
            if G.shape != Z.shape:
                raise ValueError(
                    f"the target returned a gradient of shape {G.shape} for states {Z.shape}.")
            if not np.all(np.isfinite(G)):
                raise FloatingPointError(
                    "the chains diverged (non-finite gradient); use a smaller step_size.")
            noise_g = rng.standard_normal(Z.shape) if sg > 0 else unused
            noise_i = rng.standard_normal(Z.shape)
            update(Z, V, G, noise_g, noise_i, eps, C, sg, si)
            yield Z.copy()

    def sample(self, target, Z0, n_samples, *, burn_in=0, thin=1, random_state=None,
               momentum=None, verbose=0):
        """Run the chains and keep every ``thin``-th state after ``burn_in`` steps.

        Parameters
        ----------
        target : callable or distribution
            As in :meth:`iterate`.
        Z0 : array-like of shape (n_chains, d)
            Starting states, one row per chain.
        n_samples : int
            States kept per chain.
        burn_in : int, default=0
            Steps discarded first.
        thin : int, default=1
            Keep every ``thin``-th state.
        random_state : None, int or Generator
            Seed or generator of the chains' noise.
        momentum : array-like of shape (n_chains, d), default=None
            Initial momenta; ``None`` draws them from N(0, I).
        verbose : int, bool or "auto", default=0
            A progress bar over the steps, with the time left, on standard error
            (``"auto"``: only when it is a terminal). The draws do not depend on it.

        Returns
        -------
        ndarray of shape (n_samples, n_chains, d)
            ``draws[t]`` is the state after ``burn_in + (t + 1) * thin`` steps.
        """
        n_samples = check_positive_int(n_samples, "n_samples")
        burn_in = check_positive_int(burn_in, "burn_in", minimum=0)
        thin = check_positive_int(thin, "thin")
        verbose = check_verbose(verbose)
        out = []
        n_steps = burn_in + n_samples * thin
        steps = self.iterate(target, Z0, n_steps, random_state=random_state, momentum=momentum)
        with progress_bar(n_steps, verbose=verbose, desc="SGHMC", unit="step") as bar:
            for t, Z in enumerate(steps, start=1):
                if t > burn_in and (t - burn_in) % thin == 0:
                    out.append(Z)
                bar.update(1)
        return np.stack(out)

    def __repr__(self):
        return (f"SGHMC(step_size={self.step_size!r}, friction={self.friction!r}, "
                f"gradient_noise={self.gradient_noise!r}, "
                f"noise_estimate={self.noise_estimate!r})")
