"""Sharding: meshes of devices, partition specs, shardings (how an array's elements are laid out
over devices), sharding propagation through programs and the text picture of a layout."""
