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

# Samplers (a typed key is unwrapped to its data; dtype=None / mode=None mean the defaults;
# sharded=True: JAX's sampler takes out_sharding).
bits = _api(_p.bits, sharded=True)
uniform = _api(_d.uniform, sharded=True)
normal = _api(_d.normal, sharded=True)
truncated_normal = _api(_d.truncated_normal, sharded=True)
randint = _api(_d.randint, default_dtype=int, sharded=True)
bernoulli = _api(_d.bernoulli, sharded=True)
rademacher = _api(_d.rademacher, default_dtype=int, sharded=True)
gumbel = _api(_d.gumbel, sharded=True)
exponential = _api(_d.exponential, sharded=True)
categorical = _api(_d.categorical, sharded=True)
permutation = _api(_d.permutation, sharded=True)
choice = _api(_d.choice)

gamma = _api(_s.gamma, sharded=True)
loggamma = _api(_s.loggamma, sharded=True)
beta = _api(_s.beta, sharded=True)
dirichlet = _api(_s.dirichlet, sharded=True)
chisquare = _api(_s.chisquare, sharded=True)
f = _api(_s.f, sharded=True)
t = _api(_s.t, sharded=True)
generalized_normal = _api(_s.generalized_normal, sharded=True)
ball = _api(_s.ball, sharded=True)
poisson = _api(_s.poisson, sharded=True)
binomial = _api(_s.binomial)
multinomial = _api(_s.multinomial)

laplace = _api(_s2.laplace, sharded=True)
logistic = _api(_s2.logistic, sharded=True)
cauchy = _api(_s2.cauchy, sharded=True)
pareto = _api(_s2.pareto, sharded=True)
weibull_min = _api(_s2.weibull_min)
rayleigh = _api(_s2.rayleigh, sharded=True)
maxwell = _api(_s2.maxwell, sharded=True)
double_sided_maxwell = _api(_s2.double_sided_maxwell)
lognormal = _api(_s2.lognormal, sharded=True)
triangular = _api(_s2.triangular, sharded=True)
wald = _api(_s2.wald, sharded=True)
geometric = _api(_s2.geometric, sharded=True)
orthogonal = _api(_s2.orthogonal, sharded=True)
multivariate_normal = _api(_s2.multivariate_normal, sharded=True)

del _api
