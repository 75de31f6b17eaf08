"""Command line parsing only: every action is delegated."""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import List, Optional, Sequence

from . import __version__, cache
from .config import ConfigError, find_config, load_settings
from .confirm import confirm, format_unpredicted, load_trace
from .discovery import collect_files
from .diagnostics import Diagnostic
from .engine import analyse_text, check_bytes, raise_recursion_limit
from .fixes.diff import diff_report
from .fixes.fixer import FileFix, fix_bytes
from .fixes.writer import write_results
from .docs import rules_markdown
from .doctor.command import doctor_command
from .trace.command import trace_command
from .report import FORMATS, MACHINE_FORMATS, format_fix_hint, format_fixed, format_statistics, format_summary, format_text
from .rules import ALL_RULES, RULES_BY_CODE, RULES_BY_NAME
from .runner import Job, check_files, default_processes, fix_files
from .selection import enabled_codes, ignored_for

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
_COMMANDS = ("check", "rules", "explain", "trace", "doctor")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"devlint: error: {message} (see `devlint --help`)\n")
        raise SystemExit(EXIT_ERROR)


def _codes(value: str) -> List[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="devlint", description="Find device-placement bugs in PyTorch code.")
    parser.add_argument("--version", action="version", version=f"devlint {__version__}")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)

    check = commands.add_parser("check", help="check files and directories (the default command)")
    check.add_argument("paths", nargs="*", metavar="PATH", help="files or directories; `-` reads stdin (default: .)")
    check.add_argument("--select", type=_codes, help="rules to run: codes, prefixes (DEV1), names, or ALL")
    check.add_argument("--extend-select", type=_codes, action="extend", default=[], help="rules to add to the selection")
    check.add_argument("--ignore", type=_codes, action="extend", default=[], help="rules to leave out")
    check.add_argument("--extend-exclude", type=_codes, action="extend", default=[], help="more paths/globs to skip")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply excludes to files named on the command line too (for pre-commit and editors)")
    check.add_argument("--output-format", choices=FORMATS, default="text")
    check.add_argument("--output-file", type=Path, metavar="FILE",
                       help="write the report to FILE instead of standard output")
    check.add_argument("--statistics", action="store_true", help="count findings per rule")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when problems are found")
    check.add_argument("--stdin-filename", help="the name to report for code read from stdin")
    check.add_argument("-j", "--jobs", type=int, default=0, help="processes to use (default: all cores)")
    check.add_argument("--config", type=Path, help="read settings from this pyproject.toml")
    check.add_argument("--no-cache", action="store_true", help="analyse every file, ignoring and not writing .devlint_cache")
    check.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    check.add_argument("--fix", action="store_true", help="apply safe fixes, writing the files in place")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix or --diff, also apply fixes that may change behaviour; shows them as fixable")
    check.add_argument("--diff", action="store_true",
                       help="print the changes --fix would make as a unified diff; write nothing (exit 1 if any)")
    check.add_argument("--confirm", metavar="TRACE",
                       help="mark each finding confirmed, contradicted or not reached by a `devlint trace` report")
    check.add_argument("--show-fixes", action="store_true",
                       help="list the fixes applied (with --fix), or each finding's fix")

    rules = commands.add_parser("rules", help="list all rules")
    rules.add_argument("--output-format", choices=("text", "json", "markdown"), default="text",
                       help="markdown: the full documentation of every rule (docs/rules.md)")

    explain = commands.add_parser("explain", help="show a rule's documentation")
    explain.add_argument("rule", metavar="CODE", help="a rule code (DEV101) or name")

    trace = commands.add_parser("trace", help="run a program under the runtime tracer (needs torch)",
                                usage="devlint trace [options] (script.py | -m module) [args ...]")
    trace.add_argument("--simulate-gpus", type=int, default=2, metavar="N",
                       help="GPUs to simulate when none is present (default 2)")
    trace.add_argument("--continue", dest="keep_going", action="store_true",
                       help="record a device mismatch and keep going, to find several in one run")
    trace.add_argument("--root", help="only files under DIR count as the user's")
    trace.add_argument("--out", default="devlint-trace.json", help="the JSON report (default devlint-trace.json)")
    trace.add_argument("--check", action="store_true",
                       help="then check the program's folder and mark each finding confirmed, contradicted or not reached")
    trace.add_argument("target", nargs=argparse.REMAINDER, help="the program and its arguments")

    doctor = commands.add_parser("doctor", help="say why PyTorch does or does not use the GPU on this machine")
    doctor.add_argument("--json", action="store_true", help="print the diagnosis as JSON (schema in the README)")
    doctor.add_argument("--require-accelerator", action="store_true",
                        help="exit 1 unless an accelerator is usable (a start-up check for CI and job scripts)")
    doctor.add_argument("--python", metavar="PATH", help="diagnose the torch of this interpreter (default: this one)")
    doctor.add_argument("--replay", metavar="FILE", help="diagnose a machine recorded by `devlint doctor --json`")
    doctor.add_argument("-v", "--verbose", action="store_true", help="show the evidence of every check")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0] not in _COMMANDS and args_list[0] not in ("-h", "--help", "--version")):
        args_list.insert(0, "check")
    args = build_parser().parse_args(args_list)
    try:
        if args.command == "rules":
            return list_rules(args.output_format)
        if args.command == "explain":
            return explain_rule(args.rule)
        if args.command == "doctor":
            return doctor_command(args.json, args.require_accelerator, args.python, args.replay, args.verbose)
        if args.command == "trace":
            if not args.target:
                raise ConfigError("trace needs a program: devlint trace script.py [args] or -m module")
            if args.simulate_gpus < 0:
                raise ConfigError("--simulate-gpus must be 0 or more")
            return trace_command(args.target, args.out, args.simulate_gpus, args.keep_going, args.root, args.check)
        return run_check(args)
    except ConfigError as error:
        sys.stderr.write(f"devlint: error: {error}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("devlint: interrupted\n")
        return 130
    except BrokenPipeError:  # `devlint . | head`: the reader left; say nothing more
        _silence_stdout()
        return EXIT_ERROR


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that Python's flush at exit does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def run_check(args: argparse.Namespace) -> int:
    paths = args.paths or ["."]
    if args.jobs < 0:
        raise ConfigError("--jobs must be 0 (all cores) or a positive number")
    config_path = args.config
    if config_path is not None and not config_path.is_file():
        raise ConfigError(f"config file not found: {config_path}")
    settings = load_settings(config_path or find_config(paths))
    settings = replace(
        settings,
        select=args.select if args.select is not None else settings.select,
        extend_select=settings.extend_select + args.extend_select,
        ignore=settings.ignore + args.ignore,
        exclude=settings.exclude + args.extend_exclude,
    )
    enabled = enabled_codes(settings)
    if paths == ["-"]:
        return _check_stdin(args, settings, enabled)
    if "-" in paths:
        raise ConfigError("`-` (stdin) cannot be combined with other paths")
    files = collect_files(paths, settings, args.force_exclude)
    cache_directory = None if args.no_cache else cache.prepare(str(settings.root))
    jobs = [Job(path, enabled - ignored_for(path, settings), cache_directory, settings.fallback_style)
            for path in files]
    processes = args.jobs or default_processes()
    progress = _progress if sys.stderr.isatty() and len(files) >= 200 and not args.quiet else None
    fixed: List[Diagnostic] = []
    if args.fix or args.diff:
        diagnostics, results = fix_files(jobs, processes, args.unsafe_fixes, progress)
        _report_fix_problems(results)
        if args.diff:
            return _print_diffs(results, args.quiet)
        diagnostics, fixed, not_written = write_results(results, diagnostics)
        for message in not_written:
            sys.stderr.write(f"devlint: {message}\n")
    else:
        diagnostics = check_files(jobs, processes, progress)
    unpredicted = []
    if args.confirm:
        events, reached = load_trace(args.confirm)
        diagnostics, unpredicted = confirm(diagnostics, events, reached)
    _report(args, diagnostics, len(files), fixed, sys.stdout)
    if unpredicted:
        stream = sys.stdout if args.output_format == "text" and args.output_file is None else sys.stderr
        stream.write(format_unpredicted(unpredicted))
    return EXIT_FINDINGS if diagnostics and not args.exit_zero else EXIT_CLEAN


def _check_stdin(args: argparse.Namespace, settings, enabled) -> int:
    """`-`: check stdin; with --fix the fixed source goes to stdout and the report to stderr."""
    name = args.stdin_filename or "-"
    codes = enabled - ignored_for(name, settings)
    raise_recursion_limit()
    data = sys.stdin.buffer.read()
    diagnostics, _ = check_bytes(data, name, codes, None, settings.fallback_style)
    if not (args.fix or args.diff):
        _report(args, diagnostics, 1, [], sys.stdout)
        return EXIT_FINDINGS if diagnostics and not args.exit_zero else EXIT_CLEAN

    def analyse(text: str) -> List[Diagnostic]:
        return analyse_text(text, name, codes, None, settings.fallback_style)[0]

    result = fix_bytes(data, name, diagnostics, analyse, args.unsafe_fixes)
    _report_fix_problems([result])
    if args.diff:
        return _print_diffs([result], args.quiet)
    sys.stdout.buffer.write(result.fixed if result.fixed is not None else data)
    sys.stdout.flush()
    _report(args, result.remaining, 1, result.applied, sys.stderr)
    return EXIT_FINDINGS if result.remaining and not args.exit_zero else EXIT_CLEAN


def _report_fix_problems(results: List[FileFix]) -> None:
    for result in results:
        for problem in result.problems:
            where = f"{result.path}:" if problem[:1].isdigit() else f"{result.path}: "
            sys.stderr.write(f"devlint: warning: {where}{problem}\n")


def _print_diffs(results: List[FileFix], quiet: bool) -> int:
    diffs, summary = diff_report(results)
    sys.stdout.write(diffs)
    if not quiet:
        sys.stderr.write(summary + "\n")
    return EXIT_FINDINGS if diffs else EXIT_CLEAN


def _report(args: argparse.Namespace, diagnostics: List[Diagnostic], files_checked: int,
            fixed: List[Diagnostic], stream) -> None:
    if args.output_file is not None:
        try:
            with open(args.output_file, "w", encoding="utf-8", newline="\n") as report:
                _write_report(args, diagnostics, files_checked, fixed, report)
        except OSError as error:
            raise ConfigError(f"cannot write {args.output_file}: {error.strerror or error}") from None
        return
    _write_report(args, diagnostics, files_checked, fixed, stream)


def _write_report(args: argparse.Namespace, diagnostics: List[Diagnostic], files_checked: int,
                  fixed: List[Diagnostic], stream) -> None:
    if args.output_format in MACHINE_FORMATS:
        stream.write(MACHINE_FORMATS[args.output_format](diagnostics))
        return
    stream.write(format_text(diagnostics, args.unsafe_fixes, args.show_fixes and not args.fix))
    if args.statistics:
        stream.write(format_statistics(diagnostics))
    if args.show_fixes and args.fix:
        stream.write(format_fixed(fixed))
    if not args.quiet:
        stream.write(format_summary(diagnostics, files_checked, len(fixed)))
        if not args.fix:
            stream.write(format_fix_hint(diagnostics, args.unsafe_fixes))


def _progress(done: int, total: int) -> None:
    end = "\n" if done == total else ""
    sys.stderr.write(f"\rdevlint: checked {done}/{total} files{end}")
    sys.stderr.flush()


def list_rules(output_format: str) -> int:
    if output_format == "markdown":
        sys.stdout.write(rules_markdown())
        return EXIT_CLEAN
    if output_format == "json":
        sys.stdout.write(json.dumps([
            {"code": r.code, "name": r.name, "severity": r.severity, "summary": r.summary,
             "fixable": r.fixable, "default_enabled": r.default_enabled} for r in ALL_RULES], indent=2) + "\n")
        return EXIT_CLEAN
    for rule in ALL_RULES:
        default = "" if rule.default_enabled else "  (off by default)"
        sys.stdout.write(f"{rule.code}  {rule.name:<34} {rule.severity:<8} {rule.summary}{default}\n")
    return EXIT_CLEAN


def explain_rule(selector: str) -> int:
    rule = RULES_BY_CODE.get(selector.upper()) or RULES_BY_NAME.get(selector)
    if rule is None:
        raise ConfigError(f"unknown rule {selector!r} (see `devlint rules`)")
    sys.stdout.write(rule.documentation())
    return EXIT_CLEAN


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
