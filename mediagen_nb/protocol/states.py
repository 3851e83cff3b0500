"""Status words of the service's resources, one constant each, as the spec's States and transitions.

The client and the sandbox both read them, so a status is spelled once.
"""

# Generation
QUEUED = "queued"  # listed by the machine-readable catalog only; a client treats it like PROCESSING
PROCESSING = "processing"
SUCCEEDED = "succeeded"
FAILED = "failed"  # also the failed state of analyses, replication runs and short-video jobs
GENERATION_STATES = (QUEUED, PROCESSING, SUCCEEDED, FAILED)

# Analysis (replication)
ANALYZING = "analyzing"
READY = "ready"
ANALYSIS_STATES = (ANALYZING, READY, FAILED)

# Replication run, in order
GENERATING = "generating"
STITCHING = "stitching"
DONE = "done"  # also a finished short-video job
RUN_STATES = (GENERATING, STITCHING, DONE, FAILED)

# Short-video job stages, in order, then DONE or FAILED
SCRIPTING = "scripting"
PORTRAIT = "portrait"
ANIMATING = "animating"
CAPTIONING = "captioning"
JOB_STATES = (SCRIPTING, PORTRAIT, ANIMATING, CAPTIONING, DONE, FAILED)

# The ``event`` of a replication run's webhook, whether it is done or failed.
REPLICATION_COMPLETED = "replication.completed"

# Nothing moves a resource out of these.
FINAL = frozenset({SUCCEEDED, FAILED, READY, DONE})
