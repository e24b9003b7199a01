"""Normalisation shared by the harvest sources."""

from __future__ import annotations

import pytest

from surge_datasets.harvest.normalize import (canonical_category, display_abstract, display_title, in_archive,
                                              iso_timestamp, latex_to_unicode, normalize_categories, split_id)


@pytest.mark.parametrize("alias, canon", [("cs.NA", "math.NA"), ("math.IT", "cs.IT"), ("q-fin.EC", "econ.GN"),
                                          ("math.MP", "math-ph"), ("stat.TH", "math.ST"), ("cs.SY", "eess.SY"),
                                          ("cs.LG", "cs.LG")])
def test_category_aliases(alias, canon):
    assert canonical_category(alias) == canon


def test_categories_dedup_primary_first():
    assert normalize_categories("cs.IT math.IT cs.LG") == (["cs.IT", "cs.LG"], "cs.IT")
    assert normalize_categories(["stat.ML", "cs.SY", "eess.SY"], primary="cs.SY") == (["eess.SY", "stat.ML"], "eess.SY")
    assert in_archive(["eess.SY"], "cs") and in_archive(["math.NA"], "cs") and not in_archive(["math.AG"], "cs")
    assert in_archive(["cs.LG"], "cs.LG") and not in_archive(["cs.CL"], "cs.LG")


@pytest.mark.parametrize("raw, iso", [
    ("2016-05-26T17:59:46Z", "2016-05-26T17:59:46Z"), ("2008-01-25", "2008-01-25T00:00:00Z"),
    ("Mon, 2 Apr 2007 19:18:42 GMT", "2007-04-02T19:18:42Z"), ("2016-05-26T19:59:46+02:00", "2016-05-26T17:59:46Z"),
    ("", None), ("garbage", None)])
def test_dates(raw, iso):
    assert iso_timestamp(raw) == iso


def test_ids_split_by_regex():
    assert split_id("http://arxiv.org/abs/solv-int/9901001v3") == ("solv-int/9901001", 3)
    assert split_id("2106.12135v12") == ("2106.12135", 12)
    assert split_id("abc") == (None, None)


def test_display_text():
    assert latex_to_unicode(r"G\"odel, Erd\H{o}s and \c{C}elik use $\alpha$-\emph{nets}, 5\% of {BERT}") == \
        "Gödel, Erdős and Çelik use $\\alpha$-nets, 5% of BERT"
    assert latex_to_unicode("plain 90% text") == "plain 90% text"
    assert display_title("Plain\n  title") == ("Plain\n  title", None)
    assert display_title(r"Na\"ive") == ("Naïve", r"Na\"ive")
    assert display_abstract("  Two\nlines  ") == ("Two lines", None)
    shown, raw = display_abstract(r"  Poincar\'e  map ")
    assert shown == "Poincaré map" and raw == r"Poincar\'e  map"
