"""The SurGE metrics, one module each, and the runner that evaluates a folder of generated surveys.

* :mod:`.recall` - comprehensiveness (recall of the GT bibliography);
* :mod:`.citation_accuracy` - NLI citation accuracy at document, section and sentence level;
* :mod:`.structure` - soft heading recall and structure quality (LLM judge);
* :mod:`.content` - content quality (LLM judge);
* :mod:`.rouge_bleu` - ROUGE-1/2/L and BLEU against the GT sections;
* :mod:`.runner` - ``evaluate_dir`` (results.json / results.jsonl / results.md, resumable);
* :mod:`.compare` - tables and charts across result folders; :mod:`.demo` - the offline demo.

Every metric takes ``mode='reference'`` (the paper's code, for published-number comparability) or
``mode='paper'`` (the formulas as the paper writes them, robust parsing).
"""
