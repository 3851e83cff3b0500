"""The statuses of the spec's resources, written once (its "States and transitions")."""

# Generation. The catalog's machine-readable document also lists ``queued``: treated as processing.
PROCESSING = "processing"
QUEUED = "queued"
SUCCEEDED = "succeeded"
FAILED = "failed"  # also the failed state of analyses, replication runs and short-video jobs

# Analysis (replication).
ANALYZING = "analyzing"
READY = "ready"

# Replication run, in order.
GENERATING = "generating"
STITCHING = "stitching"
DONE = "done"  # also the finished state of short-video jobs

# Short-video job stages, in order, then DONE or FAILED.
SCRIPTING = "scripting"
PORTRAIT = "portrait"
ANIMATING = "animating"
CAPTIONING = "captioning"
JOB_STAGES = (SCRIPTING, PORTRAIT, ANIMATING, CAPTIONING)

# Nothing moves a resource out of these.
FINAL = frozenset({SUCCEEDED, FAILED, READY, DONE})
