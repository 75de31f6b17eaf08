"""What the parser cannot take in reasonable time, found before it is asked to.

libcst's parser slows down with the square of the length of one long operator
chain (a 10,000-term sum takes minutes) and overflows the C stack on a long
method chain (`x.float().float()...`, each link a level of nesting), so a file
with such a line is not parsed: it gets a DEV003 that names the line, and the
run goes on.
"""
from __future__ import annotations

import re
from typing import Optional, Tuple

#: Binary operators in one line above which the file is not parsed.
MAX_OPERATORS_PER_LINE = 2000
#: Lines shorter than this cannot hold that many operators: they are not looked at.
_LONG_LINE = 2 * MAX_OPERATORS_PER_LINE
_SHORTEST = 3 * 400  # a chain of 400 links needs at least 3 characters a link
_OPERATOR = re.compile(r"[-+*/%@|&^]")
#: Calls, subscripts and attributes chained in one line (each one nests the rest).
MAX_LINKS_PER_LINE = 400
_LINK = re.compile(r"[)\]]\s*[.(\[]")


def overlong_expression(text: str) -> Optional[Tuple[int, int, str]]:
    """(line, count, what) of the first physical line with too many binary operators or chained
    calls, or None."""
    if len(text) < _SHORTEST:
        return None
    for number, line in enumerate(text.splitlines(), 1):
        if len(line) < _SHORTEST:
            continue
        links = len(_LINK.findall(line))
        if links > MAX_LINKS_PER_LINE:
            return number, links, "chained calls"
        if len(line) >= _LONG_LINE:
            count = len(_OPERATOR.findall(line))
            if count > MAX_OPERATORS_PER_LINE:
                return number, count, "operators"
    return None
