"""`challenge schema [KIND]`: the JSON Schema of a file kind, for editors with the YAML language server."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from runner.tree.schema import NAMES, json_schema, json_schemas

from . import summary

if TYPE_CHECKING:  # not imported to run: `challenge schema` needs none of what the other commands share
    from .common import SubParsers


def register(sub: SubParsers) -> None:
    s = sub.add_parser("schema", help=summary("schema"))
    s.add_argument("kind", nargs="?", choices=NAMES, help="one kind (default: all, as a mapping by kind)")
    s.set_defaults(func=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    schema = json_schema(args.kind) if args.kind else json_schemas()
    sys.stdout.write(json.dumps(schema, indent=2, ensure_ascii=False) + "\n")  # as is: no console markup
    return 0
