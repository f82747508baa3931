"""lm-evaluation-harness runs hf_icl's tasks offline and gets hf_icl's numbers.

The exports are written by `python -m hf_icl.export`, the task YAMLs by `hf-icl lm-eval-tasks` (its function), and
`lm_eval.simple_evaluate` scores two kinds of model: random tiny hf_icl checkpoints (one per task tokenizer) and a
tiny GPT-2 built from a config, saved with a character tokenizer (a plain `transformers` model, no hf_icl code). The
oracle is hf_icl's own evaluator on the same rows: RegBench accuracy and TVD (lm-eval's `--limit` counts positions,
so hf_icl scores the same positions: the row cut after them; the truth at a position depends only on its prefix),
and string accuracy of the generation tasks, query by query.
"""

from __future__ import annotations

import datasets
import lm_eval  # in the dev extra: a missing package fails here, it does not skip
import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.export import main as export_main
from hf_icl.harness.tasks import main as lm_eval_tasks
from hf_icl.tasks import task_config
from hf_icl.tasks.char_tokenizer import char_tokenizer
from hf_icl.tasks.generation.evaluation import evaluate_generation, pipeline_continuations, score
from hf_icl.tasks.generation.harness import stop_strings
from hf_icl.tasks.generation.spec import TASKS
from hf_icl.tasks.generation.tokenizers import mqar_symbols
from hf_icl.tasks.regbench.evaluation import evaluate_regbench
from hf_icl.tasks.regbench.tokenizer import REGBENCH_SYMBOLS

REGBENCH_POSITIONS = 60  # lm-eval's --limit on RegBench: the first 60 positions of the first row
COPY = {"test_min_length": 6, "test_max_length": 10, "test_length_step": 4, "n_per_length": 2, "n_train": 4,
        "n_validation": 2}  # fmt: skip
MQAR = {"vocab_size": 20, "input_seq_len": 16, "num_kv_pairs": 4, "n_test": 6, "n_train": 4, "n_validation": 2}
MQAR_SHAPE = ("vocab_size", "input_seq_len", "num_kv_pairs")
LIMIT = 24  # queries per generation task: every copy and lookup row, all 6 MQAR rows (4 queries each)


def flags(options: dict) -> list[str]:
    return [arg for key, value in options.items() for arg in (f"--{key.replace('_', '-')}", str(value))]


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    """The exports, the task folder, and a TaskManager that sees only hf_icl's tasks."""
    from lm_eval.tasks import TaskManager

    root = tmp_path_factory.mktemp("harness")
    cache = str(root / "cache")
    export_main(["regbench", "--output", str(root / "regbench"), "--configs", "n150", "--n-train", "4",
                 "--n-test", "2", "--n-validation", "2", "--cache-dir", cache])  # fmt: skip
    export_main(["copying", "--output", str(root / "copying"), "--configs", "copy", "lookup_prefix", "lookup_suffix",
                 "--cache-dir", cache, *flags(COPY)])  # fmt: skip
    export_main(["mqar", "--output", str(root / "copying"), "--cache-dir", cache, *flags(MQAR)])
    written = lm_eval_tasks(["--data", str(root / "regbench"), str(root / "copying"), "--output", str(root / "tasks")])
    assert set(written) == {"hf_icl_regbench", "hf_icl_copy", "hf_icl_mqar", "hf_icl_lookup_prefix",
                            "hf_icl_lookup_suffix", "hf_icl_lookup"}  # fmt: skip
    return root, TaskManager(include_path=str(root / "tasks"), include_defaults=False)


def save_hf_icl(folder, tokenizer, seed: int = 0):
    """A random tiny hf_icl Transformer over `tokenizer`'s vocabulary, saved with it."""
    torch.manual_seed(seed)
    config = hf_icl.config_for("transformer", "tiny", vocab_size=len(tokenizer), position_embedding="rope")
    model = AutoModelForCausalLM.from_config(config).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, tokenizer


def save_gpt2(folder, seed: int = 0):
    """A tiny GPT-2 from a config with a character tokenizer: RegBench's 20 symbols first, in its order (so hf_icl's
    evaluator reads the same columns), then every other character of the copy, lookup and MQAR tasks."""
    from transformers import GPT2Config, GPT2LMHeadModel

    others = [chr(c) for c in range(ord("s"), ord("z") + 1)] + ["$", "*"] + mqar_symbols(MQAR["vocab_size"])
    tokenizer = char_tokenizer(REGBENCH_SYMBOLS + others, pad_token="*", eos_token=".")
    torch.manual_seed(seed)
    ids = {"eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id, "bos_token_id": None}
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=1024, n_embd=32, n_layer=2, n_head=2, **ids)
    model = GPT2LMHeadModel(config).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, tokenizer


def simple_evaluate(task_manager, folder, tasks: list[str], limit: int) -> dict:
    return lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={folder},trust_remote_code=True,dtype=float32",
        tasks=tasks,
        task_manager=task_manager,
        limit=limit,
        batch_size=1,
        device="cpu",
        bootstrap_iters=0,
        log_samples=True,
    )


def check_regbench(out: dict, model, tokenizer, root) -> None:
    row = datasets.load_dataset(str(root / "regbench"), "n150", split="test")[0]
    assert len(row["text"]) > REGBENCH_POSITIONS + 1
    cut = {**row, "text": row["text"][: REGBENCH_POSITIONS + 1]}  # exactly the first REGBENCH_POSITIONS positions
    ours = evaluate_regbench(model, tokenizer, [cut], baseline_orders=(), normalized_orders=())["model"]
    theirs = out["results"]["hf_icl_regbench"]
    assert theirs["sample_len"] == REGBENCH_POSITIONS
    assert theirs["accuracy,none"] == pytest.approx(ours["accuracy"], abs=1e-12)
    assert theirs["tvd,none"] == pytest.approx(ours["tvd"], abs=1e-6)
    assert 0 < ours["tvd"] < 1


def check_generation(out: dict, task: str, model, tokenizer, root, options: dict) -> None:
    """lm-eval's exact match equals hf_icl's string accuracy, overall and query by query; and lm-eval generated
    what hf_icl's pipeline generated, up to the first stop string."""
    rows, queries = [], []
    for row in datasets.load_dataset(str(root / "copying"), task, split="test"):
        if len(queries) >= LIMIT:
            break
        rows.append(row)
        queries += TASKS[task].spec.queries(row)
    assert 0 < len(queries) <= LIMIT, "the limit ends at a row boundary, so lm-eval scores these rows' queries"
    config = task_config(task, **{k: v for k, v in options.items() if k not in ("n_train", "n_validation", "n_test")})
    ours = evaluate_generation(task, model, tokenizer, rows, config, batch_size=1, baselines=False)
    samples = sorted(out["samples"][f"hf_icl_{task}"], key=lambda s: s["doc_id"])
    assert len(samples) == len(queries) == ours["num_queries"]
    assert out["results"][f"hf_icl_{task}"]["exact_match,none"] == pytest.approx(ours["model"]["string_accuracy"])
    continuations = pipeline_continuations(model, tokenizer, queries, batch_size=1)
    exact, _ = score(queries, continuations)
    stops = stop_strings(task)
    for query, sample, continuation, correct in zip(queries, samples, continuations, exact):
        assert sample["doc"]["prompt"] == query.prompt and sample["doc"]["answer"] == query.answer
        assert sample["exact_match"] == correct
        generated = sample["filtered_resps"][0]
        first_stop = min((continuation.index(s) for s in stops if s in continuation), default=None)
        if first_stop is None:
            assert generated.startswith(continuation), (generated, continuation)
        else:
            assert generated == continuation[:first_stop], (generated, continuation)


def test_hf_icl_checkpoints_score_as_hf_icls_evaluator(harness, tmp_path):
    root, manager = harness
    regbench = save_hf_icl(tmp_path / "regbench", hf_icl.load_tokenizer("regbench"))
    out = simple_evaluate(manager, tmp_path / "regbench", ["hf_icl_regbench"], REGBENCH_POSITIONS)
    check_regbench(out, *regbench, root)

    copier = save_hf_icl(tmp_path / "copy", hf_icl.load_tokenizer("copy"))
    out = simple_evaluate(manager, tmp_path / "copy", ["hf_icl_copy", "hf_icl_lookup"], LIMIT)
    for task in ("copy", "lookup_prefix", "lookup_suffix"):
        check_generation(out, task, *copier, root, COPY)
    assert "exact_match,none" in out["results"]["hf_icl_lookup"]

    recall = answering_model(tmp_path / "mqar", root)
    out = simple_evaluate(manager, tmp_path / "mqar", ["hf_icl_mqar"], LIMIT)
    assert 0 < out["results"]["hf_icl_mqar"]["exact_match,none"] < 1
    check_generation(out, "mqar", *recall, root, MQAR)


def answering_model(folder, root):
    """An hf_icl MQAR checkpoint that answers every query with the test split's most frequent value, so exact match
    is neither 0 nor 1: its final LayerNorm outputs a multiple of that value's (tied) embedding at every position."""
    tokenizer = hf_icl.load_tokenizer("mqar", **{k: MQAR[k] for k in MQAR_SHAPE})
    model, _ = save_hf_icl(folder, tokenizer)
    answers = [a for row in datasets.load_dataset(str(root / "copying"), "mqar", split="test") for a in row["answers"]]
    value = tokenizer.convert_tokens_to_ids(max(set(answers[:LIMIT]), key=answers[:LIMIT].count))
    embedding = model.get_output_embeddings().weight[value].detach()  # (d,)
    with torch.no_grad():
        model.model.norm.weight.zero_()
        model.model.norm.bias.copy_(20 * embedding / embedding.norm())
    assert (model(torch.tensor([[0, 1, 2]])).logits.argmax(-1) == value).all()
    model.save_pretrained(folder)
    return model, tokenizer


def test_a_plain_gpt2_scores_as_hf_icls_evaluator(harness, tmp_path):
    root, manager = harness
    gpt2 = save_gpt2(tmp_path / "gpt2")
    out = simple_evaluate(manager, tmp_path / "gpt2", ["hf_icl_regbench", "hf_icl_copy", "hf_icl_mqar"], LIMIT)
    assert out["results"]["hf_icl_regbench"]["sample_len"] == LIMIT
    # RegBench with the same limit: the first LIMIT positions
    row = datasets.load_dataset(str(root / "regbench"), "n150", split="test")[0]
    cut = {**row, "text": row["text"][: LIMIT + 1]}
    ours = evaluate_regbench(*gpt2, [cut], baseline_orders=(), normalized_orders=())["model"]
    assert out["results"]["hf_icl_regbench"]["accuracy,none"] == pytest.approx(ours["accuracy"], abs=1e-12)
    assert out["results"]["hf_icl_regbench"]["tvd,none"] == pytest.approx(ours["tvd"], abs=1e-6)
    check_generation(out, "copy", *gpt2, root, COPY)
    check_generation(out, "mqar", *gpt2, root, MQAR)


def test_the_regbench_score_is_the_metric_on_a_hand_computed_position():
    """One position, three-symbol alphabet view: the model puts 0.5 on `a`, 0.2 on `b`, 0.1 on `|` and 0.2 outside
    the alphabet; the truth is ½ `a`, ½ `c`. TVD = ½ (|0.5-0.5| + |0.2-0| + |0-0.5| + |0.1-0| + 0.2) = 0.5."""
    from hf_icl.tasks.regbench.harness import harness_score

    probs = dict.fromkeys(REGBENCH_SYMBOLS, 0.0) | {"a": 0.5, "b": 0.2, "|": 0.1}
    truth = [0.5 if s in "ac" else 0.0 for s in REGBENCH_SYMBOLS]
    results = [(float(np.log(p)) if p else -np.inf, s == "a") for s, p in probs.items()]
    assert harness_score({"truth": truth}, results) == {"accuracy": 1.0, "tvd": pytest.approx(0.5)}
    greedy_outside = [(loglik, False) for loglik, _ in results]  # the argmax is a token outside the alphabet
    assert harness_score({"truth": truth}, greedy_outside)["accuracy"] == 0.0


def test_the_command_refuses_a_folder_without_an_export(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as exit_:
        lm_eval_tasks(["--data", str(tmp_path / "empty"), "--output", str(tmp_path / "tasks")])
    assert exit_.value.code == 2
    assert "holds no dataset export" in capsys.readouterr().err
    assert not (tmp_path / "tasks").exists()


def test_exact_match_needs_the_eos_where_the_task_has_one():
    """lm-eval's text is cut before the first stop string: an EOS task's answer must be all of it, an answer without
    EOS (MQAR) only its start."""
    from hf_icl.tasks.generation.harness import harness_exact_match

    assert harness_exact_match({"answer": "abc", "eos": True}, ["abc"]) == {"exact_match": 1.0}
    assert harness_exact_match({"answer": "abc", "eos": True}, ["abcd"]) == {"exact_match": 0.0}
    assert harness_exact_match({"answer": "abc", "eos": True}, ["ab"]) == {"exact_match": 0.0}
    assert harness_exact_match({"answer": "x", "eos": False}, ["xy"]) == {"exact_match": 1.0}
    assert harness_exact_match({"answer": "x", "eos": False}, [""]) == {"exact_match": 0.0}
