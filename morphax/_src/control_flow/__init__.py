"""Structured control flow: higher-order primitives (while, cond, scan...) whose bodies are
closed jaxprs, with rules for every transformation. Sits at the transforms layer."""
