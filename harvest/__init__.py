"""Rebuild the SurGE corpus and ground-truth surveys from arXiv (API, OAI-PMH, bulk snapshot, e-print sources).

Modules, one job each:

* :mod:`.http` -- the one rate-limited HTTP session (Retry-After, bounded retries, connection resets),
* :mod:`.normalize` -- ids, categories, dates, whitespace, LaTeX to Unicode, shared by every source,
* :mod:`.arxiv_api` -- the Atom query API (id batches, title and keyword searches),
* :mod:`.oai` -- OAI-PMH ``ListRecords`` with checkpointed resumption tokens,
* :mod:`.snapshot` -- the bulk JSON-lines metadata snapshot, streamed,
* :mod:`.store` -- resumable output folders (atomic Parquet shards + a JSON state file) and their readers,
* :mod:`.doc_ids` -- stable doc_id assignment (an official release keeps its ids),
* :mod:`.recipe` -- the paper's corpus recipe,
* :mod:`.latex_source` -- safe e-print extraction and LaTeX parsing (sections, citations, bibliography),
* :mod:`.surveys` -- ground-truth surveys from titles: resolve, fetch, parse, build Survey and Query records.

The output folder layout is described in ``harvest/README.md``.
"""

from .store import iter_harvested_corpus, iter_harvested_queries, iter_harvested_surveys

__all__ = ["iter_harvested_corpus", "iter_harvested_surveys", "iter_harvested_queries"]
