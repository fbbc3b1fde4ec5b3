"""An html.parser reading of a privselect report page: the sections by id, the figures' curves and legends, the
styles and the tables' wrappers (what the report tests check, with or without a browser)."""

from __future__ import annotations

from html.parser import HTMLParser

_VOID = {"meta", "link", "br", "img", "hr", "input", "circle", "line", "rect", "polyline", "path"}


class ReportPage(HTMLParser):
    """``text[id]``: the text of each element with an id; ``figures``: per <figure>, the curves drawn
    (the <title> of each polyline) and the legend's curve items; ``style``, ``metas``, ``svgs`` (attributes);
    ``table_parents``: the class of each table's parent element."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.text: dict[str, str] = {}
        self.figures: list[dict[str, list[str]]] = []
        self.style = ""
        self.metas: list[dict[str, str]] = []
        self.svgs: list[dict[str, str]] = []
        self.table_parents: list[str] = []
        self.times: list[str] = []
        self._stack: list[tuple[str, dict[str, str]]] = []
        self._open_ids: list[tuple[str, int]] = []
        self._capture: list[str] = []  # what the current leaf collects: "style", "curve", "legend"
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "meta":
            self.metas.append(a)
        if tag == "svg":
            self.svgs.append(a)
        if tag == "time":
            self.times.append(a.get("datetime", ""))
        if tag == "table":
            self.table_parents.append(self._stack[-1][1].get("class", "") if self._stack else "")
        if tag == "figure":
            self.figures.append({"curves": [], "legend": []})
        if tag == "polyline" and self.figures:
            self._capture.append("curve")
            self.figures[-1]["curves"].append("")
        if tag == "li" and "curve" in a.get("class", "").split() and self.figures:
            self._capture.append("legend")
            self.figures[-1]["legend"].append("")
        if tag == "style":
            self._capture.append("style")
        if tag in _VOID:
            return
        self._stack.append((tag, a))
        if "id" in a:
            self.text[a["id"]] = ""
            self._open_ids.append((a["id"], len(self._stack)))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag in ("polyline", "li", "style") and self._capture:
            kind = self._capture[-1]
            if (tag, kind) in (("polyline", "curve"), ("li", "legend"), ("style", "style")):
                self._capture.pop()
        if tag in _VOID:
            return
        while self._stack:
            open_tag, _ = self._stack.pop()
            self._open_ids = [(i, depth) for i, depth in self._open_ids if depth <= len(self._stack)]
            if open_tag == tag:
                break

    def handle_data(self, data):
        for ident, _ in self._open_ids:
            self.text[ident] += data
        if not self._capture:
            return
        kind = self._capture[-1]
        if kind == "style":
            self.style += data
        elif kind == "curve" and self._stack and self._stack[-1][0] == "title":
            self.figures[-1]["curves"][-1] += data
        elif kind == "legend":
            self.figures[-1]["legend"][-1] += data

    def words(self, ident: str) -> str:
        """The text of the element ``ident``, whitespace collapsed."""
        return " ".join(self.text[ident].split())
