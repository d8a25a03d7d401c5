"""`challenge build` and `challenge serve`: the static site from the tree and its results."""

from __future__ import annotations

import argparse
from pathlib import Path

from runner.settings import Settings
from runner.site import serve
from runner.site.build import BUILDERS, SiteConfig, build_site, builder_config, site_builder

from . import summary
from .common import SubParsers, err, open_store, out, port, settings_here
from .keys import ENV_ALLOWED_SIGNERS, publish_keys, tree_verifier


def register(sub: SubParsers) -> None:
    b = sub.add_parser("build", help=summary("build"))
    b.add_argument("--builder", choices=BUILDERS, default="mkdocs")
    b.add_argument("--pages-only", action="store_true", help="only generate the staging folder")
    b.add_argument("--strict", action="store_true", help="fail on warnings such as broken links")
    b.set_defaults(func=cmd_build)
    s = sub.add_parser("serve", help=summary("serve"))
    s.add_argument("--port", type=port, default=8000)
    s.set_defaults(func=cmd_serve)


def generate_pages(root: Path, settings: Settings) -> SiteConfig:
    """The staging folder, with what the phases allow now unsealed when the publish key is set."""
    config = SiteConfig.read(root)
    verifier = tree_verifier(root, settings)
    if verifier.enforced and not verifier.pinned:
        err.print("note: the runners' keys are read from challenges/allowed_signers, which anyone who can push "
                  f"may edit: pin them in the {ENV_ALLOWED_SIGNERS} variable (challenges/organizers.md)")
    store = open_store(root, settings, keys=publish_keys(settings), verifier=verifier)  # publishes only what verifies
    from runner.site import pages  # here, not at the top: `challenge build --help` need not import pandas

    pages.generate(store, config.stage, config.templates, config.assets,
                   cache=root / "build" / "page-cache", log=lambda line: err.print(f"left out: {line}", markup=False))
    builder_config(config)  # the navigation just generated, for the site builder
    return config


def cmd_build(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    if args.pages_only:
        out.print(f"pages generated in {generate_pages(root, settings_here()).stage}")
        return 0
    # The builder gets ready (MkDocs' imports, its cache) on another core while the pages are generated.
    with site_builder(SiteConfig.read(root), args.builder, strict=args.strict) as builder:
        generate_pages(root, settings_here())
        site = builder.build()
    out.print(f"site built in {site}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    root, settings = args.root.resolve(), settings_here()
    config = SiteConfig.read(root)
    # markup=False: an error message quoting YAML ("[1, 2]") is printed as it is, not as Rich markup.
    return serve.serve_live(config.site, args.port, lambda: build_site(generate_pages(root, settings)),
                            [root / "challenges", config.templates, config.assets],
                            log=lambda line: err.print(line, markup=False))
