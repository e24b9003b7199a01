"""surge-datasets: the reference toolkit for the SurGE survey-generation benchmark.

Small public surface; everything else lives in modules named for what they hold.
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("surge-datasets")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+source"

from .corpus import Corpus  # noqa: E402
from .schemas import CorpusDoc, Query, Section, Survey  # noqa: E402

__all__ = ["Corpus", "CorpusDoc", "Query", "Section", "Survey", "__version__"]
