"""Stage 8 (read): an advisory's Markdown ``details`` as safe HTML.

markdown-it-py (CommonMark plus tables) renders; raw HTML in the source is escaped, not
passed (``html=False``), and the output then goes through nh3 (ammonia) with a short allow
list, so even a renderer bug cannot put a script, a style, an event handler or a
``javascript:`` link on the page: repo content is hostile. Links may only be http(s) and
get ``rel="nofollow noopener noreferrer"``.
"""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

MAX_SOURCE = 400_000
_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "pre", "code", "em", "strong", "a",
         "table", "thead", "tbody", "tr", "th", "td", "blockquote", "hr", "br", "del"}
_ATTRIBUTES = {"a": {"href", "title"}, "th": {"style"}, "td": {"style"}, "code": {"class"}}
_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table") \
    .enable("strikethrough")


def render_markdown(text: str) -> str:
    """Sanitised HTML of a Markdown text (bounded in size)."""
    html = _MD.render(text[:MAX_SOURCE])
    return nh3.clean(html, tags=_TAGS, attributes=_ATTRIBUTES, url_schemes={"http", "https"},
                     link_rel="nofollow noopener noreferrer", filter_style_properties={"text-align"})
