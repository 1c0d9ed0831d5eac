"""Training on several devices or processes over one set of variables.

- ``towers``: data-parallel towers on shared variables (GPUs or logical CPUs).
- ``distributed``: asynchronous parameter-server training on TensorFlow's runtime.
- ``sync``: synchronous data-parallel training over processes on TensorFlow's
  collectives (every worker takes the step one process takes on the whole batch).
- ``cluster_spec``: cluster specs (flags, ``TF_CONFIG``, free local ports).
- ``loopback``: a private loopback network for a local cluster.
- ``launcher``: a local cluster's task processes, started, supervised, stopped in order.
- ``partitioned``: variables split over tasks: lookups that read the rows a
  partitioner wrote, errors that name the variable.
"""
