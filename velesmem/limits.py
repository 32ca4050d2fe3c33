"""Every cap from the contract, named as the contract names it. No stray literals elsewhere."""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB

# --- memory tools -------------------------------------------------------------------------
MAX_EMBEDDABLE_TEXT_BYTES = 2048  # one fact given to remember
MAX_FACT_BYTES = 1 * MIB  # remember_extracted text, stored compiler sources
MAX_METADATA_BYTES = 64 * KIB  # serialized metadata of a fact or a fragment
MAX_RECALL_LIMIT = 1000  # k cap for recall / recall_where / recall_fused
DEDUP_EXTRA_DEPTH = 8  # with dedup on, recall ranks 2k + this many so groups collapse to k
DEFAULT_RECALL_K = 10
DEFAULT_FUSED_HOPS = 2
MAX_FUSED_HOPS = 10
DEFAULT_GRAPH_BOOST = 0.15
MIN_FUSED_POOL = 64  # pool default = max(k * FUSED_POOL_FACTOR, MIN_FUSED_POOL)
FUSED_POOL_FACTOR = 8
MAX_FUSED_POOL = 1000
MAX_RELATION_BYTES = 512
MAX_LINKS_PER_FACT = 64  # links given to one remember call
DEFAULT_WHY_HOPS = 2
MAX_WHY_HOPS = 10
MAX_WHY_NODE_DEGREE = 64
MAX_WHY_NODES = 500
MAX_WHY_EDGES = 2000
DEFAULT_LIST_LIMIT = 50
MAX_LIST_LIMIT = 1000
MAX_FIELD_NAME_BYTES = 256
MAX_FILTERS = 64  # predicates in one recall_where
MAX_QUERY_BYTES = 64 * KIB
MAX_TTL_SECONDS = 100 * 366 * 24 * 3600  # ttl_seconds upper bound (~100 years)
MAX_INTERNAL_BYTES = 16 * MIB  # content, and serialized metadata, of one internal fact
MAX_SCAN_INTERNAL = 100_000  # limit of one scan_internal call

# --- import (velesdb-memory import) -------------------------------------------------------
# One line of an export file: a longer one is refused while the file is read, before it is
# parsed or held whole (`import --max-line-bytes` changes it). The largest line an export
# writes is an internal fact: MAX_INTERNAL_BYTES of content and as much metadata, JSON-escaped.
MAX_IMPORT_LINE_BYTES = 64 * MIB

# --- learned confidence -------------------------------------------------------------------
DEFAULT_CONFIDENCE = 0.5
FEEDBACK_SUCCESS_STEP = 0.1
FEEDBACK_FAILURE_STEP = 0.05

# --- context compiler ---------------------------------------------------------------------
MAX_FRAGMENTS = 1024
MAX_TOKEN_BUDGET = 10_000_000
MAX_MEDIA_B64_BYTES = 4 * MIB  # one fragment's base64 media
MAX_REQUEST_MEDIA_B64_BYTES = 64 * MIB  # all media of one compile request, together
MAX_INGEST_FILE_BYTES = 1 * MIB
MAX_INGEST_REQUEST_BYTES = 64 * MIB
MAX_INGEST_FILES = 64
MAX_TRANSCRIPT_BYTES = 8 * MIB
DEFAULT_MIN_SEGMENT_BYTES = 256
MAX_WORKING_CONTEXT_BYTES = 1 * MIB
MAX_FRAGMENT_BYTES = 1 * MIB  # one fragment's (or transcript segment's) text
MAX_SAVINGS_EVENTS = 10_000  # compilation events one context_savings sweep reads (then truncated)
SAVINGS_BUCKET_SECONDS = 86_400  # savings over time (the dashboard's plot): one point per UTC day
MAX_CONTEXT_NAME_BYTES = 1 * KIB  # a project or session name of the working-context tools
MAX_OTHER_SESSIONS = 50  # other_sessions listed by load_working_context

# --- HTTP daemon --------------------------------------------------------------------------
DEFAULT_HTTP_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 18090
DEFAULT_HTTP_MAX_SESSIONS = 64
DEFAULT_ATTACH_RECONNECT_SECONDS = 60  # a stdio relay waits this long for a restarting daemon
# The largest legal request is a compile_context whose fragments carry the per-request media
# cap, plus their text and the JSON-RPC envelope. Anything larger cannot be a valid call and is
# refused with 413 before it is buffered.
DEFAULT_HTTP_MAX_BODY_BYTES = MAX_REQUEST_MEDIA_B64_BYTES + 16 * MIB
# A session with no request in flight (a live client keeps its GET stream open) expires after this:
# clients that exit without DELETE (the Inspector CLI, mcp-remote) leak theirs.
HTTP_SESSION_IDLE_SECONDS = 5 * 60
# At the session cap, an initialize whose room can only come from a session still opening or a call
# still in flight waits this long for one to finish before it is refused with 503.
HTTP_SESSION_ADMIT_WAIT_SECONDS = 10
LEAF_CERT_DAYS = 30
CA_CERT_YEARS = 10
LEAF_RENEW_FRACTION = 1 / 3  # the leaf is renewed once less than this share of its lifetime remains
LEAF_RENEW_CHECK_MAX_SECONDS = 3600  # how often, at most, the running daemon looks at its leaf
DEFAULT_HTTP_MAX_CONNECTIONS = 512  # open HTTP connections; at the cap the longest-waiting idle one is closed
HTTP_FD_RESERVE = 64  # descriptors kept back from connections for the store, logs and TLS files
HTTP_FD_TARGET = 4096  # the daemon raises its soft descriptor limit to this when the hard limit allows
HTTP_REQUEST_TIMEOUT_SECONDS = 10  # TLS handshake, a whole request head, any pause in a request body
HTTP_KEEP_ALIVE_SECONDS = 5  # an idle keep-alive connection is closed after this
HTTP_TLS_SHUTDOWN_SECONDS = 2  # wait for the client's TLS close_notify before dropping a connection
# After an early answer (413) the rest of the body is read and discarded, at most this much and this
# long, so the client can finish sending and read the answer instead of a reset connection.
HTTP_REFUSED_BODY_DRAIN_BYTES = 256 * MIB
HTTP_REFUSED_BODY_DRAIN_SECONDS = 10
# Request bodies held at once across all connections (a body is parsed while the call runs, so
# each costs a few times its size); one more waits in line, then gets 503. By default one
# largest-legal body at a time: large calls are rare, small ones never wait.
DEFAULT_HTTP_MAX_BODY_BYTES_IN_FLIGHT = DEFAULT_HTTP_MAX_BODY_BYTES
HTTP_BODY_BUDGET_EXEMPT_BYTES = 1 * MIB  # bodies this small never wait for the budget
HTTP_BODY_QUEUE_SECONDS = 30  # longest wait in line for the body budget
HTTP_DRAIN_SECONDS = 30  # on SIGTERM/SIGINT, longest wait for in-flight calls to finish
# ... and for connections that just opened (or just got an answer) to send the request they were
# about to: it gets the worded 503 instead of a closed connection. Idle longer than this: done.
HTTP_DRAIN_QUIET_SECONDS = 0.5
HTTP_CLOSE_SECONDS = 2  # then the longest wait for connections to close before they are dropped

# --- authentication (docs/auth.md) ---------------------------------------------------------
AUTH_TOKEN_BYTES = 32  # random bytes in a bearer token (secrets.token_urlsafe): 43 characters
AUTH_TOKEN_PREFIX = "vmt_"  # marks a velesmem token, so secret scanners and people recognise it
MAX_AUTH_TOKEN_NAME_BYTES = 64  # a token's name, recorded as the author of its writes
MAX_BEARER_BYTES = 512  # a longer Authorization value is refused without a lookup

# --- extraction ---------------------------------------------------------------------------
MAX_ENTITY_NAME_BYTES = MAX_RELATION_BYTES  # a topic, subject, object or attr entity
MAX_PREDICATE_BYTES = MAX_RELATION_BYTES  # an edge: predicate becomes a relation label
MAX_ATTR_KEY_BYTES = MAX_FIELD_NAME_BYTES
MAX_ATTR_VALUE_BYTES = MAX_METADATA_BYTES  # one attr: value, serialized
MAX_TOPICS_PER_FACT = MAX_LINKS_PER_FACT  # each topic costs the fact two edges
EXTRACTOR_CHUNK_BYTES = 6 * KIB  # passage slice sent to a remote model in one call
EXTRACTOR_NUM_CTX = 8192  # Ollama context window asked for: prompt + slice + reply fit in it
EXTRACTOR_NUM_PREDICT = 4096  # Ollama reply cap in tokens; a reply cut by it fails the job
MAX_EXTRACTOR_REPLY_BYTES = 4 * MIB  # a larger HTTP reply body is refused unread
DEFAULT_EXTRACTOR_TIMEOUT_SECONDS = 300  # one model call (VELESDB_MEMORY_EXTRACTOR_TIMEOUT)
EXTRACTOR_CONNECT_TIMEOUT_SECONDS = 10
EXTRACTOR_MAX_ATTEMPTS = 3  # per model call; connection drops, 429 and 5xx are retried
EXTRACTOR_RETRY_BACKOFF_SECONDS = 0.5  # before the 2nd attempt, doubled for each later one
MAX_EXTRACTOR_ERROR_CHARS = 300  # of a server's error body quoted in a failure reason
# Identifier hubs (the offline autograph): an identifier whose idf = ln(n/df)/ln(n) over the
# store's n facts falls below the floor is too common to connect anything; below
# IDENTIFIER_IDF_MIN_FACTS facts every identifier gets its hub (idf means little there).
MAX_IDENTIFIER_BYTES = MAX_ENTITY_NAME_BYTES
MIN_IDENTIFIER_IDF = 0.3
IDENTIFIER_IDF_MIN_FACTS = 100

# --- the entity graph ---------------------------------------------------------------------
MAX_ENTITY_RELATIONS = 64  # resolved relations per direction answered by entity
MAX_ENTITY_SCAN_EDGES = 4096  # raw edges scanned per direction to find them
MAX_PENDING_EXTRACTIONS = 64  # non-terminal remember_extracted jobs admitted
MAX_IDEMPOTENCY_KEY_BYTES = 256
AUTOGRAPH_QUEUE_MAX = 4096  # facts waiting for autograph; beyond it they are dropped, counted
AUTOGRAPH_LINGER_SECONDS = 0.05  # a queued fact waits this long for others to be linked with
# The curation lane (memory/curate.py): duplicate and supersede checks after the acknowledgement.
CURATE_BATCH = 32  # facts checked per background transaction
CURATE_LATER_SLACK = 16  # extra neighbours read when facts written later may crowd the nearest
CURATE_QUIET_S = 0.05  # remembers closer than this keep the lane to its busy share
# the lane's share of the time while remembers keep coming: its checks hold the GIL, so each
# point of it is taken from the threads taking those remembers (they catch up after)
CURATE_BUSY_SHARE = 0.02
CURATE_MAX_PAUSE_S = 0.5  # the longest the lane rests between two batches meanwhile
CURATE_POLL_S = 0.5  # an idle lane looks for work this often without a wake
CURATE_RETRY_S = 1.0  # after a failed batch (the store busy or closing)
CURATE_SETTLE_S = 60.0  # MemoryService.settle's default wait for the lane to empty

# --- online embedding migration (the migration_* tools) -----------------------------------
DEFAULT_MIGRATION_JOURNAL_BYTES = 64 * MIB
DEFAULT_MIGRATION_FACT_BATCH = 256
DEFAULT_MIGRATION_REPLAY_BATCH = 256
DEFAULT_MIGRATION_EDGE_CAP = 4096
DEFAULT_MIGRATION_OBSERVATION_WINDOW = 3
DEFAULT_MIGRATION_VERIFICATION_RESERVE_MS = 100
MAX_MIGRATION_BATCH = 65_536  # fact_batch / replay_batch upper bound
MAX_MIGRATION_PAUSE_BUDGET_MS = 60_000
MAX_MIGRATION_OBSERVATION_WINDOW = 1_000
MIGRATION_PAUSE_WAIT_MS = 2_000  # longest wait for in-flight calls once requests are paused

# --- embedders ----------------------------------------------------------------------------
# Tokens whose hash bucket the hash embedder remembers (~250 bytes each). Every distinct token
# of every text passes through it, so 200,000 held ~30 MiB at 100k facts; common words stay in.
HASH_TOKEN_CACHE = 16_384
EMBED_WARM_WAIT_SECONDS = 30.0  # how long a call waits for a model that is still loading
# Texts per model call (sorted by token length). Compute-bound: 16 costs no more CPU per text
# than 64, and a query queued behind a bulk import waits for at most one such call.
LOCAL_EMBED_BATCH = 16
LOCAL_EMBED_PADDING_SLACK = 1.2  # a call's padded tokens may exceed its real tokens by 20 %
LOCAL_EMBED_MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length; longer texts are truncated
LOCAL_EMBED_MAX_THREADS = 4  # onnxruntime intra-op threads: min(cores, this)
# An import embeds each batch in this many parts at once on the Runtime's worker pool (the local
# model embeds one caller's texts on one thread; its own run slots bound the parts further).
IMPORT_EMBED_PARTS = 4
REMOTE_EMBED_BATCH = 64  # texts per HTTP embeddings request
BACKLOG_EMBED_BATCH = 64  # facts stored while the model loaded, embedded per step afterwards
REMOTE_EMBED_TIMEOUT_SECONDS = 30.0  # read/write timeout of one request
REMOTE_EMBED_CONNECT_TIMEOUT_SECONDS = 5.0
REMOTE_EMBED_ATTEMPTS = 3  # tries per request on a dropped connection or a 5xx
REMOTE_EMBED_BACKOFF_SECONDS = 0.2  # doubled after each failed try

# --- resident memory of the SQLite store --------------------------------------------------
# No memory-mapped reads: SQLite maps the file once per connection, and the daemon has a reader
# connection per worker thread, so each page was counted once per connection that touched it
# (a 49 MiB store at 20k facts showed 229 MiB of mapped pages, growing with the store). Reads go
# through each connection's page cache, backed by the OS page cache (not counted as ours).
SQLITE_MMAP_BYTES = 0
# Page cache of the one writer connection. Pages it misses come from the OS page cache (not
# counted as ours); 16 MiB held 10 MiB more in a 100k-fact daemon than this, for no write speed
# (4,000 remembers into a 100k store, one caller, alternating runs: 326-359/s with 16 MiB and
# 4 MiB reader caches, 324-350/s with these).
SQLITE_WRITER_CACHE_KIB = 4 * KIB
# Page cache of each reader connection (one per thread that reads: the worker pool, the
# autograph, the sweeper, ...): the daemon's readers hold at most about a dozen of these. The
# inner B-tree pages a recall walks fit; leaf pages come from the OS page cache.
SQLITE_READER_CACHE_KIB = 1 * KIB
# Page cache of each connection that reads exact vectors back for a search's candidates (a few
# dozen random rows a search: the cache holds the B-tree's inner pages, the rows come from the
# OS page cache).
SQLITE_VECTOR_READER_CACHE_KIB = 512

# --- resident memory of the process ---------------------------------------------------------
# glibc malloc arenas (``velesmem.arenas``): the default, 8 per core, keeps memory freed by each
# thread resident in its own arena.
MALLOC_ARENAS = 2

# --- CPU --------------------------------------------------------------------------------------
# Threads of numpy's BLAS in a velesdb-memory process. The daemon runs many small matrix
# products at once (exact scans of up to 8,192 vectors, one per concurrent recall); OpenBLAS's
# own threads add nothing there and spin between calls: 8 HTTPS clients doing remember + recall
# cost 12.9-15.3 ms of daemon CPU per call with two BLAS threads, 8.0-9.9 ms with one.
BLAS_THREADS = 1

# Hybrid recall runs its text and vector sides on two threads from this many facts (SQLite):
# below it both answer in well under a millisecond and the hop costs what the overlap saves
# (in-process at 5k facts: 1.36-1.41 vs 1.31-1.38 ms serial, +25 % CPU; at 40k: 2.01-2.10 vs
# 2.43-2.45 ms).
PARALLEL_SEARCH_MIN_FACTS = 16_384

# Consolidation (velesdb-memory consolidate): superseded versions older than this many days are
# archived; at most this many runs may be journaled and not yet committed at once.
DEFAULT_ARCHIVE_AFTER_DAYS = 30.0
DEFAULT_DECAY_AFTER_DAYS = 180.0  # a fact with no feedback, unwritten this long, decays once
DECAY_STEP = 0.1  # confidence a decayed fact loses (0.5 → 0.4); its undo gives it back
MAX_PENDING_CONSOLIDATIONS = 4
CONSOLIDATION_REPORT_CHARS = 120  # characters of each fact's content shown in a run's report
MAX_ARCHIVE_EDGE_SCAN = 256  # out-edges read per recalled fact to see whether it is archived
CONSOLIDATION_HISTORY = 50  # past runs the dashboard's Consolidation page lists
CONSOLIDATION_REPORT_SHOWN = 200  # changes of one run shown with their texts (the rest counted)
MAX_ARCHIVE_AFTER_DAYS_FORM = 36_500.0  # the dashboard's archive-age field accepts up to this

# --- supersede chains (velesmem/memory/supersede.py) --------------------------------------------
# A new fact supersedes an older live one in the same scope when their subject words (the words
# left once values are set aside) overlap at least this much (overlap coefficient) and a value
# differs. Tuned on the even-numbered triples of bench/data/updates.jsonl (bench/updates.py).
SUPERSEDE_SUBJECT_OVERLAP = 0.7
# Subject words a fact needs before it can supersede (or be superseded): shorter ones say too
# little to tell "the same subject" from "the same topic".
SUPERSEDE_MIN_SUBJECT_WORDS = 2
# An update changes one thing: at most this many subject words differ between the two facts, and
# at most this many values on each side. Two descriptions of different things in one template
# ("X is a 2012 film directed by …" / "Y is a 1974 film directed by …") differ in more. Chosen on
# the even-numbered triples of bench/data/updates.jsonl with pairs of LoCoMo turns and SQuAD
# paragraphs as non-updates; HotpotQA's sentences held out (docs/curation.md).
SUPERSEDE_MAX_SUBJECT_CHANGE = 2
SUPERSEDE_MAX_VALUE_CHANGE = 3
# Vector-index candidates read on remember when looking for the fact a new one supersedes.
SUPERSEDE_CANDIDATES = 8
# Versions followed along a supersedes chain (newer or older) before the walk stops.
MAX_SUPERSEDE_CHAIN = 32
# Texts whose parsed statement (supersede) and lexical signature (duplicates) are kept: every
# remember compares the new fact with up to ~16 candidates, and a store's popular candidates
# come back again and again (a few hundred bytes each).
STATEMENT_CACHE = 1024
# Metadata keys that scope memory: a fact supersedes only one with the same values for these.
SCOPE_KEYS = ("project",)

# --- the dashboard (velesmem/web/) --------------------------------------------------------------
LOG_TAIL_RECORDS = 50  # recent warnings and errors the Status page shows (velesmem/logtail.py)
LOG_TAIL_CHARS = 500  # characters kept of each
STATUS_SESSIONS_SHOWN = 100  # live MCP sessions the Status page lists (most recently active first)
MAX_FACT_PAGE_EDGES = 200  # links in and links out each shown on a fact's page
MAX_CONFIDENCE_EVENTS = 50  # confidence changes kept per fact (the newest; older ones dropped)
DEFAULT_DASHBOARD_PAGE = 50  # facts a Memories page lists (keyset paging: one page read at a time)
MAX_DASHBOARD_PAGE = 200
DASHBOARD_SCAN_PAGES = 10  # pages a state-filtered browse reads at most to fill one (then: Next)
DASHBOARD_CONCURRENT_REQUESTS = 2  # dashboard requests doing store work at once (/mcp never waits on them)
MAX_DASHBOARD_FORM_BYTES = 64 * KIB  # a dashboard form's body; larger is refused unread
MAX_DASHBOARD_SESSIONS = 256  # login sessions held in memory (the oldest is dropped beyond)
DASHBOARD_SESSION_SECONDS = 12 * 3600  # a login session's lifetime
