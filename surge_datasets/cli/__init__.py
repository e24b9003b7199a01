"""The ``surge`` command line. Each area adds its commands from its own module (``register(group)``)."""

from __future__ import annotations

import importlib
import logging

import click

from .. import __version__

# modules under surge_datasets.cli that contribute commands, in --help order
_AREAS = ("data", "evaluate", "metrics", "harvest", "retrieval")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="surge")
@click.option("-v", "--verbose", is_flag=True, help="Log debug messages.")
def main(verbose: bool) -> None:
    """SurGE toolkit: build the benchmark's Hub datasets, evaluate generated surveys, harvest arXiv, retrieve.

    \b
    Example:
      surge demo
      surge build --official data/ --out build/
      surge evaluate my_outputs/ --data build/ --out results/my-system
    """
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


for _area in _AREAS:
    try:
        _module = importlib.import_module(f"{__name__}.{_area}")
    except ModuleNotFoundError as exc:  # an area not installed in this tree
        if exc.name != f"{__name__}.{_area}":
            raise
        continue
    _module.register(main)
