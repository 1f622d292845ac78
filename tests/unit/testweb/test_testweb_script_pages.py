"""Script pages (``WebParams.script_link_share``): their <a href> links exist only through an inline
script, the links-only truth agrees with the rendered body, and the closure knows both crawls."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter

from webgather.config import RenderConfig
from webgather.testweb import WebModel, WebParams
from webgather.testweb.closure import closure
from webgather.testweb.params import FaultRates, crawl_config_for

from test_testweb_model import links_in

MODEL = WebModel(WebParams.for_tests(seed=11, port=8080, script_link_share=0.5))
SCRIPT = re.compile(rb"<script>\(function\(\)\{var u=(\[.*?\]),p=")


def test_script_links_are_only_in_the_script_and_agree_with_the_links_only_truth() -> None:
    pages = 0
    for url in MODEL.content_urls():
        response = MODEL.page(url)
        truth = MODEL.page(url, body=False)
        assert truth.follow_links == response.follow_links and truth.script_links == response.script_links, url
        static = Counter(links_in(url, response.body))
        assert static + Counter(response.script_links) == Counter(response.follow_links), url
        found = SCRIPT.search(response.body)
        if response.script_links:
            pages += 1
            assert found is not None and json.loads(found.group(1).replace(b"<\\/", b"</")) == list(response.script_links)
        else:
            assert found is None
    assert 0 < pages < len(MODEL.content_urls())


def test_the_knob_off_changes_no_byte() -> None:
    plain, zero = WebModel(WebParams.for_tests(seed=11)), WebModel(WebParams.for_tests(seed=11, script_link_share=0.0))
    for url in plain.content_urls()[:40]:
        assert plain.page(url).body == zero.page(url).body and not plain.page(url).script_links


def test_the_closure_follows_script_links_only_from_rendered_pages() -> None:
    model = WebModel(WebParams.for_tests(n_hosts=3, mean_out_degree=5.0, script_link_share=0.5, sitemap_share=0.0,
                                         faults=FaultRates.none(), robots_mix=(("allow", 1.0),)))
    seeds = (model.content_urls()[0],)
    config = crawl_config_for(model.params, seeds)
    plain = closure(model, seeds, config)
    every = closure(model, seeds, dataclasses.replace(config, render=RenderConfig(include=(".",))))
    some = closure(model, seeds, dataclasses.replace(config, render=RenderConfig(include_surt=("http://(test,web,h0001,",))))
    assert plain < some <= every
    unscripted = WebModel(dataclasses.replace(model.params, script_link_share=0.0))
    assert every == closure(unscripted, seeds, config)  # rendering every page finds every link

