r"""Small NumPy multilayer perceptrons with hand-derived gradients, and Adam.

A network is a list of layers ``[W, b]`` (``W`` of shape (fan_in, fan_out)); the
hidden layers are ReLU, the output layer linear:

.. math::

    a_0 = x, \quad a_l = \mathrm{relu}(a_{l-1} W_l + b_l) \ (l < L), \quad
    y = a_{L-1} W_L + b_L .

Backward, for an upstream gradient :math:`g_L = \partial \ell / \partial y`:
:math:`\partial \ell / \partial W_l = a_{l-1}^\top g_l`, :math:`\partial \ell /
\partial b_l = \sum_{\rm rows} g_l`, :math:`g_{l-1} = (g_l W_l^\top) \odot
1[a_{l-1} > 0]`, and :math:`\partial \ell / \partial x = g_1 W_1^\top`.

Used by :mod:`skstein.experiments.amortised_vae` (the encoders and the decoder).
"""

import numpy as np

__all__ = ["init_mlp", "mlp_forward", "mlp_backward", "Adam", "log_sigmoid", "sigmoid",
           "bernoulli_loglik"]


def init_mlp(sizes, rng):
    """Layers ``[W, b]`` for the widths ``sizes`` (input first), He-normal weights, zero biases."""
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        W = rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)
        layers.append([W, np.zeros(fan_out)])
    return layers


def mlp_forward(layers, x):
    """Output of the network at the rows of ``x`` and the activations for the backward pass."""
    acts = [x]
    a = x
    for k, (W, b) in enumerate(layers):
        a = a @ W + b
        if k < len(layers) - 1:
            a = np.maximum(a, 0.0)
        acts.append(a)
    return a, acts


def mlp_backward(layers, acts, grad_out, *, params=True, inputs=False):
    """Gradients of a loss with ``d loss / d output = grad_out``.

    Returns ``(grads, grad_x)``: ``grads`` a list of ``[dW, db]`` like ``layers`` (None
    when ``params=False``), ``grad_x`` the gradient with respect to the input (None when
    ``inputs=False``).
    """
    g = grad_out
    grads = [None] * len(layers) if params else None
    for k in range(len(layers) - 1, -1, -1):
        W = layers[k][0]
        a_in = acts[k]
        if params:
            grads[k] = [a_in.T @ g, g.sum(axis=0)]
        if k > 0:
            g = (g @ W.T) * (a_in > 0)
        elif inputs:
            return grads, g @ W.T
    return grads, None


def sigmoid(t):
    """The logistic function, without overflow."""
    return np.exp(-np.logaddexp(0.0, -t))


def log_sigmoid(t):
    r""":math:`\log \sigma(t) = -\log(1 + e^{-t})`, without overflow."""
    return -np.logaddexp(0.0, -t)


def bernoulli_loglik(logits, x, *, grad=False):
    r"""Row sums of :math:`x \log\sigma(l) + (1 - x)\log(1 - \sigma(l))`, and with
    ``grad=True`` also its gradient in :math:`l`, :math:`x - \sigma(l)` (one softplus
    for both)."""
    softplus = np.logaddexp(0.0, logits)
    value = (x * logits - softplus).sum(axis=-1)
    if not grad:
        return value
    return value, x - np.exp(logits - softplus)


class Adam:
    """Adam (Kingma & Ba 2015) on a list of parameter lists, updated in place.

    Parameters
    ----------
    params : list of list of ndarray
        The parameters (e.g. several networks' layers), updated in place by :meth:`step`.
    learning_rate : float, default=1e-3
    beta1, beta2, eps : float
        Adam's constants (0.9, 0.999, 1e-8).
    """

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8):
        self.params = params
        self.learning_rate = learning_rate
        self.beta1, self.beta2, self.eps = beta1, beta2, eps
        self.m = [[np.zeros_like(p) for p in layer] for layer in params]
        self.v = [[np.zeros_like(p) for p in layer] for layer in params]
        self.t = 0

    def step(self, grads):
        """One descent step along the gradients ``grads`` (same nesting as ``params``)."""
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        scale = self.learning_rate * np.sqrt(1 - b2**self.t) / (1 - b1**self.t)
        for layer, glayer, mlayer, vlayer in zip(self.params, grads, self.m, self.v):
            for p, g, m, v in zip(layer, glayer, mlayer, vlayer):
                m *= b1
                m += (1 - b1) * g
                v *= b2
                v += (1 - b2) * g * g
                p -= scale * m / (np.sqrt(v) + self.eps)
