"""Builder of the GT surveys dataset (``surge/surveys``): one ``test`` split of Survey rows (the benchmark's 205 topics)."""

from __future__ import annotations

import datasets

from ..official import SURVEYS_FILE, iter_official
from ..schemas import Survey, features, to_row
from ._config import SurgeConfig, configs, info, input_dir, write_rejects

DESCRIPTION = "SurGE ground-truth surveys: 205 expert-validated cs surveys with section trees and per-section citations"
SPLIT = "test"


def iter_surveys(config: SurgeConfig, folder, rejects: list[dict]):
    if config.name == "official":
        path = folder / SURVEYS_FILE
        if not path.exists():
            raise FileNotFoundError(f"{path}: the release's surveys file is missing")
        return iter_official("surveys", path, skip_invalid=config.skip_invalid, rejects=rejects)
    from ..harvest.store import iter_harvested_surveys

    return iter_harvested_surveys(folder)


class SurgeSurveys(datasets.GeneratorBasedBuilder):
    BUILDER_CONFIG_CLASS = SurgeConfig
    BUILDER_CONFIGS = configs(DESCRIPTION)
    DEFAULT_CONFIG_NAME = "official"

    def _info(self) -> datasets.DatasetInfo:
        return info(DESCRIPTION, features(Survey))

    def _split_generators(self, dl_manager):
        return [datasets.SplitGenerator(name=SPLIT, gen_kwargs={"folder": input_dir(self.config)})]

    def _generate_examples(self, folder):
        rejects: list[dict] = []
        seen: set[int] = set()
        for survey in iter_surveys(self.config, folder, rejects):
            if survey.survey_id in seen:
                raise ValueError(f"{folder}: survey_id {survey.survey_id} appears more than once")
            seen.add(survey.survey_id)
            yield survey.survey_id, to_row(survey)
        write_rejects(self.config, rejects)
