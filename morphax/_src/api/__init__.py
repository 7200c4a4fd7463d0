"""The entry points users call, above every other layer of `_src`: tracing (make_jaxpr,
eval_shape, ShapeDtypeStruct), autodiff (grad, jvp, vjp, the Jacobians...), jit with its options
and stages (Traced, Lowered, Compiled), vmap, and the debugging and callback functions. Each
flattens pytree arguments, checks them with errors that say what to do, and hands the function
to the transformation machinery."""
