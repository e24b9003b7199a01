"""SurGE ROUGE / BLEU: an `evaluate` metric wrapping surge-datasets (the implementation lives there)."""

import evaluate
from surge_datasets.evaluation import hub_metrics

NAME = "rouge_bleu"


@evaluate.utils.file_utils.add_start_docstrings(hub_metrics.DESCRIPTIONS[NAME], hub_metrics.KWARGS_DESCRIPTION)
class RougeBleu(evaluate.Metric):
    """SurGE ROUGE / BLEU (rouge_1, rouge_2, rouge_l, bleu)."""

    def _info(self):
        return hub_metrics.metric_info(NAME, evaluate)

    def _compute(self, predictions, references, **kwargs):
        return hub_metrics.compute(NAME, predictions, references, **kwargs)
