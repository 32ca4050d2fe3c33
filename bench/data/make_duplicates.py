"""Write bench/data/duplicates.jsonl: labelled pairs of project facts (seeded, reproducible).

Each template is one project fact with several paraphrases sharing slot values. Pairs:
paraphrase (label 1: two wordings, same values), near-miss (label 0: one value, number, name or
the negation changed), containment (label 0: a short fact beside a longer one that contains it and
says more), same-topic (label 0: two different facts about the same system). Beside the
templates, hand-written pairs as agents store them (REAL: terse notes, titles, log-like lines,
facts written from one pattern about different subjects; topics prefixed ``real-``) add
paraphrases and non-duplicates not shaped by any template.
Run: python bench/data/make_duplicates.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).with_name("duplicates.jsonl")

# (slot name → choices, paraphrase forms, negated forms or None, topic)
TEMPLATES: list[tuple[dict[str, list[str]], list[str], list[str] | None, str]] = [
    ({"n": ["600", "900", "1200", "300"]},
     ["The public API is limited to {n} requests per minute per key.",
      "Each API key may send at most {n} requests every minute.",
      "Rate limit for the public API: {n} requests per minute for each key."],
     None, "ratelimit"),
    ({"who": ["Kenji Sato", "Maria Lopez", "Aisha Khan", "Tom Becker"]},
     ["{who} owns the rate limiter service.",
      "The rate limiter service is owned by {who}.",
      "Ownership of the rate limiter service sits with {who}."],
     None, "ratelimit"),
    ({"store": ["Vault", "AWS Secrets Manager", "Doppler"]},
     ["Database credentials are stored in {store}.",
      "We keep the database credentials in {store}.",
      "The credentials for the database live in {store}."],
     None, "secrets"),
    ({"days": ["30", "90", "7", "14"]},
     ["Access tokens expire after {days} days.",
      "An access token is valid for {days} days before it expires.",
      "Access tokens have a lifetime of {days} days."],
     None, "auth"),
    ({"day": ["Tuesday", "Thursday", "Friday", "Monday"]},
     ["Production deploys happen every {day} afternoon.",
      "We deploy to production on {day} afternoons.",
      "The production deploy window is {day} afternoon."],
     None, "deploy"),
    ({"db": ["PostgreSQL", "MySQL", "SQLite"]},
     ["The billing service stores invoices in {db}.",
      "Invoices of the billing service are kept in {db}.",
      "The billing service keeps its invoices in a {db} database."],
     None, "billing"),
    ({"v": ["3.11", "3.12", "3.10"]},
     ["The backend runs on Python {v}.",
      "Our backend services use Python {v}.",
      "Python {v} is the runtime of the backend."],
     None, "runtime"),
    ({"port": ["8443", "8080", "9090"]},
     ["The metrics endpoint listens on port {port}.",
      "Metrics are served on port {port}.",
      "Port {port} exposes the metrics endpoint."],
     None, "ops"),
    ({"team": ["Platform", "Payments", "Search"]},
     ["The {team} team is on call for the ingestion pipeline this week.",
      "This week the ingestion pipeline on-call rotation belongs to the {team} team.",
      "On-call for the ingestion pipeline this week: the {team} team."],
     None, "oncall"),
    ({"x": ["staging"]},
     ["Feature flags are evaluated on the server in {x}.",
      "In {x}, feature flags get evaluated server-side.",
      "{x} evaluates feature flags on the server."],
     ["Feature flags are not evaluated on the server in {x}.",
      "In {x}, feature flags never get evaluated server-side."],
     "flags"),
    ({"x": ["the mobile app"]},
     ["Dark mode is enabled by default in {x}.",
      "{x} turns dark mode on by default.",
      "By default {x} ships with dark mode enabled."],
     ["Dark mode is not enabled by default in {x}.",
      "By default {x} ships without dark mode."],
     "ui"),
    ({"x": ["the nightly job"]},
     ["{x} retries failed uploads three times.",
      "Failed uploads are retried three times by {x}.",
      "{x} makes three retries when an upload fails."],
     ["{x} does not retry failed uploads.",
      "Failed uploads are never retried by {x}."],
     "jobs"),
    ({"x": ["the session cache"]},
     ["Entries in {x} are permanent.",
      "{x} keeps its entries permanently stored.",
      "{x} stores permanent entries."],
     ["Entries in {x} are temporary.",
      "{x} stores temporary entries."],
     "cache"),
    ({"x": ["the reporting bucket"]},
     ["{x} is public.",
      "{x} is readable by the public.",
      "Access to {x} is public."],
     ["{x} is private.",
      "Access to {x} is private."],
     "storage"),
    ({"mb": ["25", "50", "100", "10"]},
     ["Uploads larger than {mb} MB are rejected by the gateway.",
      "The gateway refuses any upload over {mb} MB.",
      "Maximum upload size at the gateway: {mb} MB."],
     None, "gateway"),
    ({"region": ["eu-west-1", "us-east-1", "ap-south-1"]},
     ["The primary cluster runs in {region}.",
      "Our primary cluster is hosted in {region}.",
      "{region} hosts the primary cluster."],
     None, "infra"),
    ({"tool": ["Grafana", "Datadog", "Kibana"]},
     ["Dashboards for the checkout flow live in {tool}.",
      "The checkout flow dashboards are in {tool}.",
      "We track the checkout flow on {tool} dashboards."],
     None, "observability"),
    ({"h": ["2", "4", "24", "48"]},
     ["Incident postmortems must be published within {h} hours.",
      "A postmortem has to be out within {h} hours of an incident.",
      "Postmortems for incidents are due {h} hours after the incident."],
     None, "process"),
    ({"lib": ["httpx", "requests", "aiohttp"]},
     ["The crawler uses {lib} for outgoing HTTP calls.",
      "Outgoing HTTP calls in the crawler go through {lib}.",
      "{lib} handles the crawler's outgoing HTTP requests."],
     None, "crawler"),
    ({"pct": ["80", "90", "70"]},
     ["Pull requests need {pct}% test coverage to merge.",
      "Merging a pull request requires {pct}% test coverage.",
      "Test coverage of {pct}% is required before a pull request merges."],
     None, "ci"),
    ({"who": ["Priya Natarajan", "Lars Eriksen", "Chen Wei"]},
     ["{who} approves every schema migration.",
      "Every schema migration is approved by {who}.",
      "Schema migrations need approval from {who}."],
     None, "db"),
    ({"n": ["5", "3", "10"]},
     ["The search index is rebuilt every {n} minutes.",
      "Every {n} minutes the search index gets rebuilt.",
      "A rebuild of the search index runs each {n} minutes."],
     None, "search"),
]

# unrelated facts on the same topic as a template (label 0 against any of its forms)
SAME_TOPIC = {
    "ratelimit": ["The rate limiter keeps its counters in Redis.",
                  "Requests over the limit get HTTP 429 with a Retry-After header."],
    "secrets": ["Secrets are rotated by a cron job owned by the security team.",
                "Database backups are encrypted with a key from the KMS."],
    "auth": ["Refresh tokens are bound to the device that requested them.",
             "Access tokens are signed with RS256 keys."],
    "deploy": ["Production deploys require a green build on main.",
               "Rollbacks of production deploys are done with the deploy bot."],
    "billing": ["The billing service sends invoices by email at month end.",
                "Invoices are numbered per customer and per year."],
    "runtime": ["The backend is packaged as a Docker image built on Debian.",
                "Backend dependencies are pinned with a lock file."],
    "ops": ["The health endpoint answers on /healthz without authentication.",
            "Metrics are scraped by Prometheus every 15 seconds."],
    "oncall": ["The ingestion pipeline pages on-call when lag exceeds ten minutes.",
               "On-call handovers happen on Monday mornings."],
    "flags": ["Feature flags are named with a team prefix.",
              "Stale feature flags are removed after each release."],
    "ui": ["The mobile app follows the system font size.",
           "Dark mode colours come from the design tokens package."],
    "jobs": ["The nightly job writes its report to the ops channel.",
             "Uploads are stored in the media bucket."],
    "gateway": ["The gateway terminates TLS for every public service.",
                "The gateway logs every rejected upload with its size."],
    "infra": ["The replica cluster is used for analytics queries.",
              "Cluster nodes are replaced every quarter."],
    "observability": ["Alerts for the checkout flow go to the payments channel.",
                      "Checkout traces are sampled at one percent."],
    "process": ["Postmortems are blameless and reviewed at the weekly ops meeting.",
                "Incidents are declared in the incident channel."],
    "crawler": ["The crawler respects robots.txt.",
                "The crawler stores pages in object storage."],
    "ci": ["Pull requests need one approving review.",
           "CI runs the linters before the test suite."],
    "db": ["Schema migrations run in a transaction.",
           "The migration tool records each applied migration."],
    "cache": ["The session cache is sharded by user id.",
              "Cache entries are evicted least recently used first."],
    "storage": ["The reporting bucket is versioned.",
                "Objects in the reporting bucket are encrypted at rest."],
    "search": ["The search index lives on its own cluster.",
               "Search queries time out after two seconds."],
}


# a longer fact per topic that contains a template's fact and says more (label 0 against it):
# "deploy canary pool" is not a duplicate of "deploy canary pool minimum raised after the review"
CONTAINS = {
    "ratelimit": "{fact} Bursts above it are queued for 30 seconds, then rejected with HTTP 429.",
    "secrets": "{fact} Rotation is manual, audited by the security team each quarter.",
    "auth": "{fact} Refresh tokens last six months and are revoked on password change.",
    "deploy": "{fact} Hotfixes may go out any day with an approval from the release manager.",
    "billing": "{fact} Credit notes and refunds go to a separate ledger table.",
    "runtime": "{fact} The data pipeline is still on an older interpreter until Q3.",
    "ops": "{fact} It also exposes pprof profiles behind the admin token.",
    "oncall": "{fact} Escalations go to the engineering manager after 20 minutes.",
    "flags": "{fact} Client-side overrides are allowed only in debug builds.",
    "ui": "{fact} High-contrast mode must be switched on by hand in the settings.",
    "jobs": "{fact} After the last retry it opens a ticket for the storage team.",
    "cache": "{fact} The cache is flushed on every schema migration.",
    "storage": "{fact} Writes need the data-eng role and are logged.",
    "gateway": "{fact} Multipart uploads are limited to 10,000 parts.",
    "infra": "{fact} A warm standby runs in a second region for failover.",
    "observability": "{fact} Alert thresholds there are reviewed every sprint.",
    "process": "{fact} Action items get a Jira ticket and an owner.",
    "crawler": "{fact} Retries use exponential backoff capped at five minutes.",
    "ci": "{fact} Generated code is excluded from the measurement.",
    "db": "{fact} Rollback scripts must be attached to the pull request.",
    "search": "{fact} A full reindex runs on Sunday nights.",
}

# hand-written pairs, closer to what agents store: (a, b, label, topic)
REAL: list[tuple[str, str, int, str]] = [
    # release process
    ("deploy canary pool", "deploy canary pool minimum raised after the review", 0, "real-release"),
    ("Canary deploys go to 5% of the pool first.", "We roll canaries out to five percent of the pool before the rest.", 1, "real-release"),
    ("Canary deploys go to 5% of the pool first.", "Canary deploys go to 10% of the pool first.", 0, "real-release"),
    ("Release branches are cut on Wednesday.", "We cut the release branch every Wednesday.", 1, "real-release"),
    ("Release branches are cut on Wednesday.", "Release branches are cut on Wednesday and frozen on Friday after the QA sign-off.", 0, "real-release"),
    ("Release notes are written by the PM.", "The PM writes the release notes.", 1, "real-release"),
    ("Release notes are written by the PM.", "Release notes are reviewed by the tech lead.", 0, "real-release"),
    ("rollback: use the deploy bot", "Rollbacks are done with the deploy bot.", 1, "real-release"),
    ("rollback: use the deploy bot", "rollback: use the deploy bot, then page the on-call SRE and post in the incident channel", 0, "real-release"),
    ("Hotfix tags start with hf-.", "Release tags start with v.", 0, "real-release"),
    # people and ownership
    ("Kenji Sato owns the rate limiter.", "The rate limiter is owned by Kenji Sato.", 1, "real-people"),
    ("Kenji Sato owns the rate limiter.", "Kenji Sato owns the billing service.", 0, "real-people"),
    ("Kenji Sato owns the rate limiter.", "Maria Lopez owns the rate limiter.", 0, "real-people"),
    ("Ask Priya about the Vault policies.", "Priya is the person to ask about Vault policies.", 1, "real-people"),
    ("Ask Priya about the Vault policies.", "Ask Priya about the Vault policies before touching the prod namespace; she rotates the root token on Mondays.", 0, "real-people"),
    ("Lars is on leave until March 3.", "Lars is out until March 3.", 1, "real-people"),
    ("Lars is on leave until March 3.", "Lars is on leave until March 10.", 0, "real-people"),
    ("Chen reviews all frontend PRs.", "All frontend pull requests are reviewed by Chen.", 1, "real-people"),
    ("Chen reviews all frontend PRs.", "Chen reviews all backend PRs.", 0, "real-people"),
    ("Aisha leads the search team.", "The search team reports to Aisha.", 1, "real-people"),
    # coding conventions
    ("Use httpx, not requests, for new HTTP code.", "New HTTP code should use httpx instead of requests.", 1, "real-code"),
    ("Use httpx, not requests, for new HTTP code.", "Use requests, not httpx, for new HTTP code.", 0, "real-code"),
    ("Tests must not hit the network.", "No test may make a network call.", 1, "real-code"),
    ("Tests must not hit the network.", "Integration tests may hit the staging network.", 0, "real-code"),
    ("type hints required on public functions", "Public functions need type hints.", 1, "real-code"),
    ("type hints required on public functions", "type hints required on public functions; mypy runs in strict mode in CI and blocks the merge", 0, "real-code"),
    ("Line length is 100 characters.", "Keep lines under 100 characters.", 1, "real-code"),
    ("Line length is 100 characters.", "Line length is 120 characters.", 0, "real-code"),
    ("Prefer dataclasses over dicts inside services.", "Inside services, use dataclasses rather than dicts.", 1, "real-code"),
    ("Prefer dataclasses over dicts inside services.", "Use pydantic models at the API boundary.", 0, "real-code"),
    ("snake_case for JSON fields", "JSON field names are snake_case.", 1, "real-code"),
    ("snake_case for JSON fields", "camelCase for JSON fields", 0, "real-code"),
    # incidents and ops
    ("The March 12 outage was caused by an expired TLS certificate.", "An expired TLS certificate caused the outage on March 12.", 1, "real-incident"),
    ("The March 12 outage was caused by an expired TLS certificate.", "The March 19 outage was caused by an expired TLS certificate.", 0, "real-incident"),
    ("The March 12 outage was caused by an expired TLS certificate.", "The March 12 outage was caused by a full disk.", 0, "real-incident"),
    ("Disk alerts fire at 85% usage.", "We alert when a disk is 85% full.", 1, "real-incident"),
    ("Disk alerts fire at 85% usage.", "Disk alerts fire at 85% usage; at 95% the node is drained automatically and replaced.", 0, "real-incident"),
    ("Kafka consumer lag pages on-call above 10k messages.", "On-call gets paged when Kafka consumer lag goes over 10k messages.", 1, "real-incident"),
    ("Kafka consumer lag pages on-call above 10k messages.", "Kafka consumer lag pages on-call above 50k messages.", 0, "real-incident"),
    ("The Redis cluster is not backed up.", "There are no backups of the Redis cluster.", 1, "real-incident"),
    ("The Redis cluster is not backed up.", "The Redis cluster is backed up nightly.", 0, "real-incident"),
    ("postgres failover", "postgres failover takes about 40 seconds and drops open transactions", 0, "real-incident"),
    # product and users
    ("Customers on the free plan get 3 projects.", "The free plan allows three projects per customer.", 1, "real-product"),
    ("Customers on the free plan get 3 projects.", "Customers on the free plan get 5 projects.", 0, "real-product"),
    ("Customers on the free plan get 3 projects.", "Customers on the pro plan get unlimited projects.", 0, "real-product"),
    ("The export button is hidden for viewers.", "Viewers do not see the export button.", 1, "real-product"),
    ("The export button is hidden for viewers.", "The export button is hidden for viewers and editors unless the workspace admin enables exports.", 0, "real-product"),
    ("Trial length is 14 days.", "Trials last 14 days.", 1, "real-product"),
    ("Trial length is 14 days.", "Trial length is 30 days.", 0, "real-product"),
    ("Invoices are sent in EUR for EU customers.", "EU customers are invoiced in EUR.", 1, "real-product"),
    ("Invoices are sent in EUR for EU customers.", "Invoices are sent in GBP for UK customers.", 0, "real-product"),
    ("onboarding email", "onboarding email goes out one hour after signup, then a reminder on day 3", 0, "real-product"),
    # architecture
    ("The API gateway is Envoy.", "We use Envoy as the API gateway.", 1, "real-arch"),
    ("The API gateway is Envoy.", "The API gateway is Kong.", 0, "real-arch"),
    ("Search runs on OpenSearch 2.11.", "OpenSearch 2.11 powers search.", 1, "real-arch"),
    ("Search runs on OpenSearch 2.11.", "Search runs on OpenSearch 2.13.", 0, "real-arch"),
    ("The billing service talks to Stripe through a queue.", "Billing calls to Stripe go through a queue.", 1, "real-arch"),
    ("The billing service talks to Stripe through a queue.", "The billing service talks to Stripe directly.", 0, "real-arch"),
    ("Service-to-service auth uses mTLS.", "Services authenticate to each other with mTLS.", 1, "real-arch"),
    ("Service-to-service auth uses mTLS.", "Service-to-service auth uses mTLS, with certificates issued by Vault and rotated every 24 hours by the sidecar.", 0, "real-arch"),
    ("The monolith still handles user signups.", "User signups are still handled by the monolith.", 1, "real-arch"),
    ("The monolith still handles user signups.", "The monolith still handles password resets.", 0, "real-arch"),
    ("rate limiter", "rate limiter moved to the edge proxy in May", 0, "real-arch"),
    # schedule and meetings
    ("Standup is at 9:30 on weekdays.", "The daily standup starts at 9:30 every weekday.", 1, "real-schedule"),
    ("Standup is at 9:30 on weekdays.", "Standup is at 10:00 on weekdays.", 0, "real-schedule"),
    ("Retro happens every other Friday.", "We hold the retro on alternate Fridays.", 1, "real-schedule"),
    ("Retro happens every other Friday.", "Planning happens every other Monday.", 0, "real-schedule"),
    ("Code freeze starts December 15.", "The code freeze begins on December 15.", 1, "real-schedule"),
    ("Code freeze starts December 15.", "Code freeze starts December 18.", 0, "real-schedule"),
    ("Code freeze starts December 15.", "Code freeze starts December 15 and ends January 5; only P0 fixes merge during it.", 0, "real-schedule"),
    ("The team offsite is in Lisbon.", "Our offsite will be held in Lisbon.", 1, "real-schedule"),
    ("The team offsite is in Lisbon.", "The team offsite is in Porto.", 0, "real-schedule"),
    ("sprint review", "sprint review moved to Thursday afternoons for the new time zone", 0, "real-schedule"),
    # one pattern, another subject: agents write many facts alike ("the X times out after 30 s")
    ("In staging the billing api times out after 30 seconds.", "In staging the search api times out after 30 seconds.", 0, "real-arch"),
    ("The ledger worker runs 4 replicas in production.", "The ledger cache runs 4 replicas in production.", 0, "real-arch"),
    ("Logs of the auth gateway are kept for 30 days.", "Logs of the media gateway are kept for 30 days.", 0, "real-incident"),
    ("The payments queue stores its data in Redis.", "The session queue stores its data in Redis.", 0, "real-arch"),
    ("Kenji Sato owns the billing service.", "Kenji Sato owns the billing dashboard.", 0, "real-people"),
    ("Chen reviews all frontend PRs on Mondays.", "Chen reviews all backend PRs on Mondays.", 0, "real-people"),
    ("The mobile app caches images for 7 days.", "The web app caches images for 7 days.", 0, "real-product"),
    ("The export job runs at 02:00 UTC.", "The import job runs at 02:00 UTC.", 0, "real-release"),
    ("Canary deploys of the api go to 5% of the pool.", "Canary deploys of the worker go to 5% of the pool.", 0, "real-release"),
    ("Type hints are required in the client library.", "Type hints are required in the server library.", 0, "real-code"),
    ("The retro for team A is on Friday.", "The retro for team B is on Friday.", 0, "real-schedule"),
    ("Disk alerts on the database hosts fire at 85% usage.", "Disk alerts on the cache hosts fire at 85% usage.", 0, "real-incident"),
    # and the same fact in the same pattern, reworded in place
    ("In staging the billing api times out after 30 seconds.", "The billing api times out after 30 seconds in staging.", 1, "real-arch"),
    ("The ledger worker runs 4 replicas in production.", "In production, the ledger worker runs 4 replicas.", 1, "real-arch"),
    ("Logs of the auth gateway are kept for 30 days.", "The auth gateway keeps its logs for 30 days.", 1, "real-incident"),
    ("The export job runs at 02:00 UTC.", "At 02:00 UTC the export job runs.", 1, "real-release"),
]


def fill(form: str, values: dict[str, str]) -> str:
    text = form.format(**values)
    return text[0].upper() + text[1:]


def pairs(rng: random.Random) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for slots, forms, negated, topic in TEMPLATES:
        name, choices = next(iter(slots.items()))
        for value in choices:
            vals = {name: value}
            # paraphrases: every pair of forms with the same value
            for i in range(len(forms)):
                for j in range(i + 1, len(forms)):
                    out.append({"a": fill(forms[i], vals), "b": fill(forms[j], vals), "label": 1,
                                "kind": "paraphrase", "topic": topic})
            # near-misses: another value, same or other wording
            for other in choices:
                if other == value:
                    continue
                i, j = rng.randrange(len(forms)), rng.randrange(len(forms))
                out.append({"a": fill(forms[i], vals), "b": fill(forms[j], {name: other}),
                            "label": 0, "kind": "near_miss", "topic": topic})
            if negated:
                for neg in negated:
                    out.append({"a": fill(rng.choice(forms), vals), "b": fill(neg, vals),
                                "label": 0, "kind": "near_miss", "topic": topic})
            fact = fill(rng.choice(forms), vals)
            out.append({"a": fact, "b": CONTAINS[topic].format(fact=fact), "label": 0,
                        "kind": "containment", "topic": topic})
            for unrelated in SAME_TOPIC[topic]:
                out.append({"a": fill(rng.choice(forms), vals), "b": unrelated, "label": 0,
                            "kind": "same_topic", "topic": topic})
    for a, b, label, topic in REAL:
        kind = "paraphrase" if label else ("containment" if _contained(a, b) else "near_miss")
        out.append({"a": a, "b": b, "label": label, "kind": kind, "topic": topic})
    return out


def _contained(a: str, b: str) -> bool:
    """Whether the shorter text's words all appear in the longer one."""
    wa, wb = (set(t.lower().strip(".,;:") for t in x.split()) for x in (a, b))
    return (wa < wb or wb < wa)


def main() -> None:
    rng = random.Random(26)
    rows = pairs(rng)
    rng.shuffle(rows)
    with OUT.open("w", encoding="utf-8") as fh:
        for n, row in enumerate(rows):
            fh.write(json.dumps({"id": n, **row}, ensure_ascii=False) + "\n")
    print(f"{len(rows)} pairs → {OUT}")


if __name__ == "__main__":
    main()
