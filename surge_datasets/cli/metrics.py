"""``surge publish-metrics`` and ``surge metrics install|list``: the evaluate metric Spaces."""

from __future__ import annotations

import json

import click

from ..metric_publishing import DEFAULT_ORG, METRIC_NAMES


def register(group: click.Group) -> None:
    group.add_command(publish_metrics_cmd)
    group.add_command(metrics_group)


def _split_names(value: str | None) -> list[str] | None:
    if not value or value == "all":
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    bad = [n for n in names if n not in METRIC_NAMES]
    if bad:
        raise click.BadParameter(f"unknown metric(s) {', '.join(bad)}; choose from {', '.join(METRIC_NAMES)}",
                                 param_hint="--names")
    return names


_NAMES_OPTION = click.option("--names", default="all", show_default=True,
                             help=f"Comma-separated metrics: {', '.join(METRIC_NAMES)}.")
_ORG_OPTION = click.option("--org", default=DEFAULT_ORG, show_default=True, help="Hub user or organisation of the Spaces.")
_JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")


@click.command("publish-metrics")
@_ORG_OPTION
@_NAMES_OPTION
@click.option("--dry-run", is_flag=True, help="Print what would be created and uploaded; change nothing.")
@click.option("--private", is_flag=True, help="Create the Spaces private.")
@_JSON_OPTION
def publish_metrics_cmd(org: str, names: str, dry_run: bool, private: bool, as_json: bool) -> None:
    """Publish the metrics as Hugging Face Spaces <org>/<name> (Gradio), loadable with evaluate.load.

    The token comes from `hf auth login` or HF_TOKEN and is never printed.

    \b
    Example:
      surge publish-metrics --org surge --dry-run
      surge publish-metrics --org my-lab --names citation_accuracy,rouge_bleu
    """
    from ..metric_publishing import publish_metrics

    try:
        steps = publish_metrics(org, _split_names(names), dry_run=dry_run, private=private,
                                progress=None if as_json else lambda s: click.echo(f"published {s.url}", err=True))
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    except Exception as exc:  # Hub errors: name the Space, hide nothing but the token
        raise click.ClickException(f"publishing to {org!r} failed: {type(exc).__name__}: {exc}") from None
    if as_json:
        click.echo(json.dumps({"dry_run": dry_run, "spaces": [s.as_dict() for s in steps]}, indent=2))
        return
    verb = "would create/update" if dry_run else "created/updated"
    click.echo(f"{'space':<34} {'files':<60} status")
    for s in steps:
        click.echo(f"{s.repo_id:<34} {', '.join(s.files):<60} {verb if dry_run else 'done'}")
    click.echo(f"{len(steps)} Space(s) {verb} (type: space, sdk: gradio)" + (" - nothing was changed" if dry_run else ""))


@click.group("metrics")
def metrics_group() -> None:
    """The evaluate metric modules (metrics/<name>/): list them, install them for offline use, publish them.

    \b
    Example:
      surge metrics list
      surge metrics install
      surge metrics publish --org surge --dry-run
    """


@metrics_group.command("install")
@_ORG_OPTION
@_NAMES_OPTION
@_JSON_OPTION
def install_cmd(org: str, names: str, as_json: bool) -> None:
    """Seed evaluate's module cache so evaluate.load("<org>/<name>") works offline (HF_EVALUATE_OFFLINE=1).

    \b
    Example:
      surge metrics install
      HF_EVALUATE_OFFLINE=1 python -c 'import evaluate; print(evaluate.load("surge/rouge_bleu"))'
    """
    from ..metric_publishing import install_metrics

    try:
        paths = install_metrics(org, _split_names(names))
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps({f"{org}/{n}": str(p) for n, p in paths.items()}, indent=2))
        return
    for name, path in paths.items():
        click.echo(f"{org + '/' + name:<34} {path}")
    click.echo(f"{len(paths)} metric module(s) installed; load them with evaluate.load('{org}/<name>')")


@metrics_group.command("list")
@_JSON_OPTION
def list_cmd(as_json: bool) -> None:
    """List the metric folders and the result keys each one returns.

    \b
    Example:
      surge metrics list
    """
    from ..evaluation.hub_metrics import RESULT_KEYS
    from ..metric_publishing import metric_folder

    rows = [{"name": n, "folder": str(metric_folder(n)), "keys": list(RESULT_KEYS[n])} for n in METRIC_NAMES]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        click.echo(f"{r['name']:<22} {', '.join(r['keys']):<80} {r['folder']}")


# `surge metrics publish` is the same command as `surge publish-metrics`
metrics_group.add_command(publish_metrics_cmd, name="publish")
