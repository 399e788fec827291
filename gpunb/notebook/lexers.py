"""Pygments lexers for PTX and SASS listings (pygments ships neither).

Borrowing another assembler's lexer (nasm) marks most PTX/SASS tokens as errors, which pygments
draws as red boxes; these small lexers know each language's comments, directives, registers,
predicates, labels and numbers, and leave everything else as plain text (never an error token).
"""

from __future__ import annotations

_cache: dict = {}


def assembly_lexer(language: str):
    """A pygments lexer instance for "ptx" or "sass"."""
    if language not in _cache:
        _cache[language] = _make(language)(stripnl=False, stripall=False, ensurenl=False)
    return _cache[language]


def without_errors(lexer):
    """`lexer` with its Error tokens made plain text: pygments' LLVM lexer predates syntax LLVM
    now prints (`memory(...)`, `captures(none)`) and would flag it."""
    from pygments.filter import simplefilter
    from pygments.token import Error, Text

    @simplefilter
    def plain(self, lexer, stream, options):
        for ttype, value in stream:
            yield (Text if ttype in Error else ttype), value

    lexer.add_filter(plain())
    return lexer


def _make(language: str):
    from pygments.lexer import RegexLexer
    from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text

    number = [(r"0[fFdD][0-9A-Fa-f]+", Number.Float), (r"0[xX][0-9A-Fa-f]+", Number.Hex),
              (r"-?\d+\.\d*(?:[eE][-+]?\d+)?", Number.Float), (r"-?\d+", Number.Integer)]
    common = [(r"\s+", Text), (r"//[^\n]*", Comment.Single), (r"/\*.*?\*/", Comment.Multiline),
              (r'"[^"\n]*"', String)]
    if language == "ptx":
        body = [(r"\.[A-Za-z_][\w.]*", Keyword.Declaration),  # .reg .param .loc .u32 ...
                (r"%[A-Za-z_][\w.]*", Name.Variable),  # %r1 %tid.x
                (r"\$[\w$]+", Name.Label),
                (r"@!?%?\w+", Keyword.Pseudo),  # predicate guards
                (r"[A-Za-z_][\w]*(?:\.[\w]+)*", Name.Function)]  # opcodes and names
    else:
        body = [(r"\.[A-Za-z_][\w.]*", Name.Label),
                (r"@!?U?P\w+", Keyword.Pseudo),
                (r"\bU?R[0-9Z]+\b|\bU?P[0-7T]\b|\bSR_\w+", Name.Variable),
                (r"c\[0x[0-9a-f]+\]", Name.Constant),
                (r"[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*", Name.Function)]
    tokens = {"root": common + body + number + [(r"[\[\]{}(),;:|!+\-*~]", Punctuation),
                                                 (r"[<>=&^]", Operator), (r".", Text)]}
    return type(f"{language.upper()}Lexer", (RegexLexer,),
                {"name": language.upper(), "aliases": [language], "tokens": tokens,
                 "flags": 0})
