"""The numbers of the spec's Limits table and time rules."""

WINDOW_SECONDS = 60.0  # rolling window of both request limits
REQUESTS_PER_KEY = 60  # every authenticated request, per API key
STARTS_PER_ACCOUNT = 60  # generation starts, per account across all keys

WAIT_MIN_SECONDS = 5
WAIT_MAX_SECONDS = 55

IDEMPOTENCY_KEY_CHARS = 255  # only the first 255 characters of a run's Idempotency-Key count
IDEMPOTENCY_RETENTION_SECONDS = 24 * 3600  # analyze and replicate starts

RUNTIME_BASE_SECONDS = 15 * 60  # generation time limit ...
RUNTIME_PER_MEDIA_SECOND = 5  # ... plus 5 s per second of input audio or video
RUNTIME_HARD_SECONDS = 30 * 60  # absolute limit

PLAN_CREDITS = {"scale": 3000, "ultra": 8000}
API_PLANS = frozenset(PLAN_CREDITS)  # plans on which keys can be created

SOURCE_VIDEO_MAX_SECONDS = 120.0  # analyze
ANALYSIS_CREDITS = 5

SHORT_VIDEO_SECONDS_DEFAULT = 45
SHORT_VIDEO_SECONDS_MIN = 20
SHORT_VIDEO_SECONDS_MAX = 180
TOPIC_CUT_CHARS = 900

LENGTH_BILLED_EXTENSIONS = (".mp3", ".wav", ".mp4")
ESTIMATE_FALLBACK_SECONDS = 30.0  # an estimate assumes this when the media length cannot be read
