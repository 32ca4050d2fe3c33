"""English function words left out of the hash embedding and of recall's BM25 query.

The NLTK English list plus the fragments contractions split into (``don``, ``t``, ``ll``…) and a
few auxiliaries; listed in docs/ranking.md.
"""

from __future__ import annotations

STOPWORDS = frozenset("""
a about above after again against all am an and any are aren as at be because been before being
below between both but by can couldn d did didn do does doesn doing don down during each few for
from further had hadn has hasn have haven having he her here hers herself him himself his how i
if in into is isn it its itself just ll m ma me mightn more most mustn my myself needn no nor not
now o of off on once only or other our ours ourselves out over own re s same shan she should
shouldn so some such t than that the their theirs them themselves then there these they this
those through to too under until up ve very was wasn we were weren what when where which while
who whom why will with won would wouldn y you your yours yourself yourselves also could get got
did does let may might must shall would us
""".split())
