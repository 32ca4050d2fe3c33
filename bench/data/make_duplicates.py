"""Write bench/data/duplicates.jsonl: labelled pairs of project facts (seeded, reproducible).

Each template is one project fact with several paraphrases sharing slot values. Pairs:
paraphrase (label 1: two wordings, same values), near-miss (label 0: one value, number, name or
the negation changed), same-topic (label 0: two different facts about the same system).
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
            for unrelated in SAME_TOPIC[topic]:
                out.append({"a": fill(rng.choice(forms), vals), "b": unrelated, "label": 0,
                            "kind": "same_topic", "topic": topic})
    return out


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
