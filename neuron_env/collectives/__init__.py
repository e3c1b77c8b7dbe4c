"""`neuron-env collectives`: torch.distributed readiness. `options` (pure: flags, sizes, ops),
`launch` (pure: torchrun/srun command lines), `runner` (starts and supervises the ranks),
`results` (pure: rows -> Results, nccl-tests' bandwidth definitions)."""
