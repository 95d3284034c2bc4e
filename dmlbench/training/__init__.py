"""One run's training: the loop (`train`), its training schemes (`schemes`), what runs record
about their triplets (`recording`) and the run folder's fingerprints (`run_folder`)."""

# What a training imports on its way (torch's compiler stack with its optimiser, the transforms,
# the models and methods): the processes that fork trainings import them once (`warm_start`,
# the preflight's fork server). The optional extras, when present.
IMPORTS = (
    "torch._dynamo",
    "dmlbench.models.embedding",
    "dmlbench.methods",
    "torchvision.transforms",
    "PIL.Image",
    "pyarrow.parquet",
)
OPTIONAL_IMPORTS = ("torch.utils.tensorboard",)
