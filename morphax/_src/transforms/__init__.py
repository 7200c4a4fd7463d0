"""Transformations of traced programs: staging to jaxprs, JVP and transposition, batching, the
jit call primitive and custom derivative rules.

custom_call is imported here: it tells the staging trace how to record custom_jvp / custom_vjp
calls (staging.custom_call_stagers), and builds on staging, so staging cannot import it.
"""

from morphax._src.transforms import custom_call  # noqa: F401
