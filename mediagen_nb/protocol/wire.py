"""Names of response and body fields the spec does not show: chosen here, once.

The spec names `input_schema`, `pricing`, `varies_by` and `example` on a model record and every
field of the Generation, Analysis and Replication run resources; everything below is our choice.
"""

# Catalog record (GET /v1/models, /v1/models/{id}).
MODEL_ID = "id"
MODEL_NAME = "name"
MODEL_DESCRIPTION = "description"
MODEL_OUTPUT_TYPE = "outputType"  # image | video | audio
MODEL_GROUP = "group"
MODEL_CREDITS = "credits"  # listed cost; the price of every run when pricing is null
LISTED_MEDIA_SECONDS = 10.0  # ours: the listed cost of a model billed by media length prices this much
MODEL_PREVIEW = "previewUrl"
MODEL_LINKS = "links"  # {"run": ..., "poll": ...}
MODELS_LIST = "models"  # data.models of the list endpoint (data is an object)

# POST /v1/estimate response data.
ESTIMATE_MODEL = "modelId"
ESTIMATE_CREDITS = "credits"
ESTIMATE_BILLING = "billing"

# Topic-to-video start body (the spec gives meanings only).
JOB_TOPIC = "topic"
JOB_SECONDS = "seconds"
JOB_GENDER = "gender"
JOB_LOOK = "look"
JOB_VOICE = "voice"
JOB_FLOW = "flow"
JOB_CAPTIONS = "captions"
JOB_MUSIC = "music"
JOB_IDEMPOTENCY = "idempotencyKey"
JOB_WEBHOOK = "webhook"

# Topic-to-video job read response (names not shown by the spec).
JOB_PROGRESS = "progress"
JOB_SCRIPT = "script"
JOB_PORTRAIT = "portraitUrl"
JOB_LIPSYNC = "lipsyncVideoUrl"
JOB_CREDITS = "creditsUsed"
JOB_EDIT_REPORT = "editReport"
JOB_DEGRADED = "degraded"

# POST /v1/analyses/{id}/blueprint answer.
BLUEPRINT_STARTED = "started"
BLUEPRINT_REASON = "reason"

# Topic-to-video GET /options response (names not shown by the spec). OPTIONS_SECONDS holds
# {"min", "max", "default"}; OPTIONS_DEFAULTS holds the defaults by body field name, the voice by gender.
OPTIONS_VOICES = "voices"  # {"man": [...], "woman": [...]}
OPTIONS_GENDERS = "genders"
OPTIONS_LOOKS = "looks"
OPTIONS_FLOWS = "flows"
OPTIONS_SECONDS = "seconds"
OPTIONS_DEFAULTS = "defaults"
