"""SurGE Soft Heading Recall: an `evaluate` metric wrapping surge-datasets (the implementation lives there)."""

import evaluate
from surge_datasets.evaluation import hub_metrics

NAME = "soft_heading_recall"


@evaluate.utils.file_utils.add_start_docstrings(hub_metrics.DESCRIPTIONS[NAME], hub_metrics.KWARGS_DESCRIPTION)
class SoftHeadingRecall(evaluate.Metric):
    """SurGE Soft Heading Recall (soft_heading_recall)."""

    def _info(self):
        return hub_metrics.metric_info(NAME, evaluate)

    def _compute(self, predictions, references, **kwargs):
        return hub_metrics.compute(NAME, predictions, references, **kwargs)
