"""`morphax.random`: JAX's threefry PRNG and samplers, bit-compatible with ``jax.random``. Keys are
raw ``uint32[2]`` arrays (`PRNGKey`) or typed ``key<fry>`` arrays (`key`); every function takes
either. Thin re-export of `morphax._src.random`."""

from morphax._src.random import distributions as _d
from morphax._src.random import keys as _k
from morphax._src.random import prng as _p
from morphax._src.random import rejection_samplers as _s
from morphax._src.random import transformed_samplers as _s2
from morphax._src.random.keys import (  # noqa: F401
    KeyArray,
    PRNGKeyDtype,
    key,
    key_data,
    key_dtype,
    key_impl,
    prng_key,
    wrap_key_data,
)
from morphax._src.random.prng import PRNGKey  # noqa: F401

_api = _k.typed_key_api

# Keys in, keys out.
split = _api(_p.split, returns_key=True)
fold_in = _api(_p.fold_in, returns_key=True, consumes=False)
clone = _api(_p.clone, returns_key=True, consumes=False)

# Samplers (a typed key is unwrapped to its data; dtype=None / mode=None mean the defaults).
bits = _api(_p.bits)
uniform = _api(_d.uniform)
normal = _api(_d.normal)
truncated_normal = _api(_d.truncated_normal)
randint = _api(_d.randint, default_dtype=int)
bernoulli = _api(_d.bernoulli)
rademacher = _api(_d.rademacher, default_dtype=int)
gumbel = _api(_d.gumbel)
exponential = _api(_d.exponential)
categorical = _api(_d.categorical)
permutation = _api(_d.permutation)
choice = _api(_d.choice)

gamma = _api(_s.gamma)
loggamma = _api(_s.loggamma)
beta = _api(_s.beta)
dirichlet = _api(_s.dirichlet)
chisquare = _api(_s.chisquare)
f = _api(_s.f)
t = _api(_s.t)
generalized_normal = _api(_s.generalized_normal)
ball = _api(_s.ball)
poisson = _api(_s.poisson)
binomial = _api(_s.binomial)
multinomial = _api(_s.multinomial)

laplace = _api(_s2.laplace)
logistic = _api(_s2.logistic)
cauchy = _api(_s2.cauchy)
pareto = _api(_s2.pareto)
weibull_min = _api(_s2.weibull_min)
rayleigh = _api(_s2.rayleigh)
maxwell = _api(_s2.maxwell)
double_sided_maxwell = _api(_s2.double_sided_maxwell)
lognormal = _api(_s2.lognormal)
triangular = _api(_s2.triangular)
wald = _api(_s2.wald)
geometric = _api(_s2.geometric)
orthogonal = _api(_s2.orthogonal)
multivariate_normal = _api(_s2.multivariate_normal)

del _api
