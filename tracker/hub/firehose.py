"""Stage 1 (source), many repos at once: the Hub's model listing sorted by ``lastModified``.

``GET /api/models?sort=lastModified&expand=sha&expand=lastModified`` lists every model,
newest change first, a thousand a page. Read until the previous read's watermark and every
tracked repo that moved since is in those pages; the ones that are not did not move. So one
request (a few when the Hub is busy) stands in for a ``model_info`` per tracked repo.

huggingface_hub's ``list_models`` pages without a timeout and sleeps through 429s
(hub-api.md §3), so the pages are read with :class:`~tracker.hub._hfhttp.HubHttp`: one
deadline per request, no retries, a size cap, ``Link: rel="next"`` followed only on the
endpoint's own origin, and Hub errors mapped to :mod:`tracker.errors` (a 429 keeps its
Retry-After).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from huggingface_hub.utils import build_hf_headers

from tracker import __version__
from tracker.errors import SourceError, SourceUnavailable
from tracker.hub._hfhttp import MAX_JSON_BYTES, BodyTooLarge, HubHttp

_SHA = re.compile(r"^[0-9a-f]{40}$")
#: Changes this much older than the watermark are read again: the Hub's clock, the order of
#: items with equal timestamps and a push landing during a read must not lose a change.
OVERLAP = timedelta(seconds=120)


@dataclass(frozen=True, slots=True)
class FirehoseItem:
    id: str
    sha: str | None  # the head of main, when the listing said it
    last_modified: datetime | None


@dataclass(frozen=True, slots=True)
class FirehoseRead:
    """What one read found. ``complete``: it reached ``since`` (or the end of the listing), so a
    repo missing from ``items`` did not change after ``since``."""

    items: tuple[FirehoseItem, ...]
    watermark: datetime | None  # the newest lastModified seen: ``since`` of the next read
    complete: bool
    requests: int
    bytes: int


class Firehose:
    """Reads the Hub's model listing, newest first, down to a watermark."""

    def __init__(
        self, endpoint: str, *, token: str | None = None, timeout: float = 30.0, page_size: int = 1000,
        max_pages: int = 20, overlap: timedelta = OVERLAP,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.page_size, self.max_pages, self.overlap = page_size, max_pages, overlap
        headers = build_hf_headers(token=token, library_name="hubwatch", library_version=__version__)
        auth = headers.get("authorization", "")
        self._http = HubHttp(self.endpoint, headers, timeout=timeout, repo_id="*",
                             secret=auth.removeprefix("Bearer ") or token)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Firehose:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, since: datetime | None) -> FirehoseRead:
        """Items changed after ``since`` minus the overlap; only the first page when ``since`` is None.

        Raises :class:`~tracker.errors.SourceError` (RateLimited with its Retry-After included).
        """
        stop_before = since - self.overlap if since is not None else None
        url: str | None = f"{self.endpoint}/api/models"
        params: Any = {"sort": "lastModified", "expand": ["sha", "lastModified"], "limit": str(self.page_size)}
        items: list[FirehoseItem] = []
        newest: datetime | None = None
        requests = size = 0
        complete = False
        while url is not None and requests < self.max_pages:
            page, next_url, n = self._page(url, params)
            requests, size, params = requests + 1, size + n, None
            for item in page:
                if item.last_modified is not None:
                    newest = item.last_modified if newest is None else max(newest, item.last_modified)
                    if stop_before is not None and item.last_modified < stop_before:
                        complete = True
                        break
                items.append(item)
            if complete or since is None:
                break
            if next_url is None:
                complete = True
            url = next_url
        return FirehoseRead(tuple(items), newest or since, complete and since is not None, requests, size)

    def _page(self, url: str, params: Any) -> tuple[list[FirehoseItem], str | None, int]:
        what = "model listing"
        try:
            r, body = self._http.get_bytes(url, what=what, params=params, max_bytes=MAX_JSON_BYTES)
        except BodyTooLarge as e:
            raise SourceError(f"{what}: answer larger than {MAX_JSON_BYTES} bytes") from e
        try:
            data = json.loads(body)
        except ValueError as e:
            raise SourceUnavailable(f"{what}: answer is not JSON") from e
        if r.status_code != 200 or not isinstance(data, list):
            raise SourceUnavailable(f"{what}: expected a JSON array (HTTP {r.status_code})")
        next_url = r.links.get("next", {}).get("url")
        if next_url and urlsplit(next_url)[:2] != urlsplit(self.endpoint)[:2]:
            raise SourceUnavailable(f"{what}: pagination link leaves {self.endpoint}")
        return [i for i in map(_item, data) if i is not None], next_url, len(body)


def _item(raw: Any) -> FirehoseItem | None:
    """One listing entry; anything malformed is skipped, never trusted."""
    if not isinstance(raw, dict):
        return None
    repo_id = raw.get("id") or raw.get("modelId")
    if not isinstance(repo_id, str) or repo_id.count("/") != 1:
        return None
    sha = raw.get("sha")
    return FirehoseItem(repo_id, sha if isinstance(sha, str) and _SHA.match(sha) else None,
                        _when(raw.get("lastModified")))


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
