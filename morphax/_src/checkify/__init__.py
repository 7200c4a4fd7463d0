"""checkify: functionalized run-time checks (the transformation behind
`morphax.experimental.checkify`). Sits with the transformation APIs; the `check` primitive it
discharges lives in `_src/higher_order/checks.py`."""

from morphax._src.checkify import automatic, control_flow  # noqa: F401  (register their rules)
from morphax._src.checkify.api import (  # noqa: F401
    all_checks,
    automatic_checks,
    check,
    check_error,
    checkify,
    debug_check,
    div_checks,
    float_checks,
    index_checks,
    nan_checks,
    user_checks,
)
from morphax._src.checkify.errors import (  # noqa: F401
    DivisionByZeroError,
    Error,
    ErrorCategory,
    FailedCheckError,
    JaxException,
    NaNError,
    OOBError,
    init_error,
)
from morphax._src.higher_order.checks import JaxRuntimeError  # noqa: F401
