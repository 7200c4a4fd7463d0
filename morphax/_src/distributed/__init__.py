"""Several processes over MPI: the process state (`state`), the MPI communicator
(`mpi_communicator`) and the host-data collectives of multihost_utils (`multihost`)."""
