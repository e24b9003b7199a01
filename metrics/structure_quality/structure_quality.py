"""SurGE Structure Quality: an `evaluate` metric wrapping surge-datasets (the implementation lives there)."""

import evaluate
from surge_datasets.evaluation import hub_metrics

NAME = "structure_quality"


@evaluate.utils.file_utils.add_start_docstrings(hub_metrics.DESCRIPTIONS[NAME], hub_metrics.KWARGS_DESCRIPTION)
class StructureQuality(evaluate.Metric):
    """SurGE Structure Quality (structure_quality)."""

    def _info(self):
        return hub_metrics.metric_info(NAME, evaluate)

    def _compute(self, predictions, references, **kwargs):
        return hub_metrics.compute(NAME, predictions, references, **kwargs)
