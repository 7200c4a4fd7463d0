"""Transformations of traced programs: staging to jaxprs, JVP, linearization and transposition,
batching, and the jaxpr-to-jaxpr form of each (`ad.jvp_jaxpr`, `partial_eval.partial_eval_jaxpr`,
`batching.batch_jaxpr`, `ad.backward_pass`) that the higher-order primitives build on. Imports the
core only: no primitive is named here."""
