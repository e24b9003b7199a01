"""``datasets`` builders for the three SurGE datasets.

The Hub holds Parquet + a YAML card (``datasets`` 5 no longer runs loading scripts), so these
builders are classes in our package: ``surge build`` runs them and saves their output as Parquet.
Each has two configs: ``official`` (the paper's release files) and ``harvest`` (a harvest folder).
"""

from .corpus import SurgeCorpus
from .queries import SurgeQueries
from .surveys import SurgeSurveys

BUILDERS = {"corpus": SurgeCorpus, "surveys": SurgeSurveys, "queries": SurgeQueries}

__all__ = ["BUILDERS", "SurgeCorpus", "SurgeQueries", "SurgeSurveys"]
