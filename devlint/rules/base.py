"""What a rule is: a code, a name, a severity, its documentation and a check.

A rule reads the analysis facts of one file and yields findings; it never
parses, walks the tree, prints or writes.  Its documentation and its inline
examples live on the class (Fixit style): `devlint explain`, `docs/rules.md`
and the test suite all read them from here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Iterator, Optional, Tuple

import libcst as cst

from ..analysis.facts import FileFacts
from ..fixes.model import Fix
from .context import RuleContext

ERROR = "error"      # crashes on a machine with the accelerator
WARNING = "warning"  # wrong or slow
INFO = "info"        # convention


@dataclass(frozen=True)
class Finding:
    node: cst.CSTNode
    message: str
    #: Builds the fix, if the finding has one; called once, after all rules ran. None from the
    #: builder means "no safe way to fix this one".
    fix: Optional[Callable[[], Optional[Fix]]] = None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[str] = ERROR
    summary: ClassVar[str]
    why: ClassVar[str]
    example: ClassVar[str]
    use_instead: ClassVar[str]
    default_enabled: ClassVar[bool] = True
    fixable: ClassVar[bool] = False
    #: What `--fix` does and how safe it is, for the docs (fixable rules only).
    fix_summary: ClassVar[str] = ""
    #: The fix treats a symptom (moves a value where it is used): `--fix` applies it only in a
    #: pass where no other fix applies, since fixing the cause often makes it unnecessary.
    fix_after_others: ClassVar[bool] = False
    #: Snippets that must report this rule on their `# expect:` lines, and
    #: snippets that must stay silent; the test suite runs both.
    invalid: ClassVar[Tuple[str, ...]] = ()
    valid: ClassVar[Tuple[str, ...]] = ()

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        return iter(())

    @classmethod
    def documentation(cls) -> str:
        """The rule's full documentation as Markdown."""
        return "\n".join([
            f"## {cls.code} `{cls.name}`",
            "",
            f"Severity: {cls.severity}. Fixable: {'yes' if cls.fixable else 'no'}."
            + ("" if cls.default_enabled else " Off by default (enable with `--extend-select`)."),
            "",
            *([f"Fix: {cls.fix_summary}", ""] if cls.fixable else []),
            cls.summary,
            "",
            "### Why is this bad?",
            "",
            cls.why.strip(),
            "",
            "### Example",
            "",
            "```python",
            cls.example.strip("\n"),
            "```",
            "",
            "### Use instead",
            "",
            "```python",
            cls.use_instead.strip("\n"),
            "```",
            "",
        ])
