"""Builder of the queries dataset (``surge/queries``): ``train`` and ``test`` splits, the paper's random 4:1 split.

The split is seeded (``SPLIT_SEED``) and recorded in every row (``split``) and in the card, so it is the
same on every build. Each query is linked to its GT survey through the first of its ``prefix_titles``.
"""

from __future__ import annotations

import random

import datasets

from ..identifiers import title_key
from ..official import QUERIES_FILE, iter_official
from ..schemas import Query, features, to_row
from ._config import SurgeConfig, configs, info, input_dir, write_rejects
from .surveys import iter_surveys

DESCRIPTION = "SurGE retrieval queries: GT survey sections as questions with the corpus doc_ids they cite"
SPLIT_SEED = 42
TRAIN_FRACTION = 0.8


def assign_splits(query_ids: list[int], seed: int = SPLIT_SEED, train_fraction: float = TRAIN_FRACTION) -> dict[int, str]:
    """The seeded 4:1 split: shuffle the sorted ids with ``random.Random(seed)``; the first 80% train."""
    ids = sorted(query_ids)
    random.Random(seed).shuffle(ids)
    n_train = round(len(ids) * train_fraction)
    return {q: ("train" if i < n_train else "test") for i, q in enumerate(ids)}


class SurgeQueries(datasets.GeneratorBasedBuilder):
    BUILDER_CONFIG_CLASS = SurgeConfig
    BUILDER_CONFIGS = configs(DESCRIPTION)
    DEFAULT_CONFIG_NAME = "official"

    def _info(self) -> datasets.DatasetInfo:
        return info(DESCRIPTION, features(Query))

    def _split_generators(self, dl_manager):
        folder = input_dir(self.config)
        rejects: list[dict] = []
        if self.config.name == "official":
            path = folder / QUERIES_FILE
            if not path.exists():
                raise FileNotFoundError(f"{path}: the release's queries file is missing")
            queries = list(iter_official("queries", path, skip_invalid=self.config.skip_invalid, rejects=rejects))
        else:
            from ..harvest.store import iter_harvested_queries

            queries = list(iter_harvested_queries(folder))
        survey_rejects: list[dict] = []
        by_title = {title_key(s.title): s.survey_id for s in iter_surveys(self.config, folder, survey_rejects)}
        splits = assign_splits([q.query_id for q in queries])
        for q in queries:
            q.split = splits[q.query_id]  # type: ignore[assignment]
            if q.survey_id is None and q.prefix_titles:
                q.survey_id = by_title.get(title_key(q.prefix_titles[0].title))
        write_rejects(self.config, rejects)
        return [
            datasets.SplitGenerator(name=name, gen_kwargs={"queries": [q for q in queries if q.split == name]})
            for name in ("train", "test")
        ]

    def _generate_examples(self, queries):
        seen: set[int] = set()
        for q in queries:
            if q.query_id in seen:
                raise ValueError(f"query_id {q.query_id} appears more than once")
            seen.add(q.query_id)
            yield q.query_id, to_row(q)
