"""`transformers.Trainer` trains an hf_icl model on a `load_dataset` export of RegBench, tokenised with the task's
public tokenizer (`hf_icl.load_tokenizer`): the loss falls, `save_model` writes a folder, and the folder loads back
to the same logits, with and without hf_icl's registration (`trust_remote_code`)."""

from __future__ import annotations

import datasets
import torch
from transformers import (
    AutoModelForCausalLM,
    DataCollatorForLanguageModeling,
    PreTrainedTokenizerFast,
    Trainer,
    TrainingArguments,
)

import hf_icl
from hf_icl.export import main as export_main

STEPS = 40


def test_trainer_learns_regbench_from_a_dataset_export_and_saves_a_loadable_model(tmp_path):
    export_main(["regbench", "--output", str(tmp_path / "regbench"), "--configs", "n150", "--n-train", "16",
                 "--n-test", "2", "--n-validation", "2", "--cache-dir", str(tmp_path / "cache")])  # fmt: skip
    splits = datasets.load_dataset(str(tmp_path / "regbench"), "n150")
    tokenizer = hf_icl.load_tokenizer("regbench")
    assert isinstance(tokenizer, PreTrainedTokenizerFast)

    def tokenize(batch):
        return tokenizer(batch["text"], return_token_type_ids=False)

    train = splits["train"].map(tokenize, batched=True, remove_columns=splits["train"].column_names)
    torch.manual_seed(0)
    config = hf_icl.config_for("transformer", "tiny", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id)
    model = AutoModelForCausalLM.from_config(config)
    arguments = TrainingArguments(
        output_dir=str(tmp_path / "trainer"),
        max_steps=STEPS,
        per_device_train_batch_size=4,
        learning_rate=3e-3,
        warmup_steps=2,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        seed=0,
        dataloader_num_workers=0,
    )
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    trainer = Trainer(model=model, args=arguments, train_dataset=train, data_collator=collator)
    trainer.train()

    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == STEPS
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.3, losses

    trainer.save_model(str(tmp_path / "model"))
    tokenizer.save_pretrained(str(tmp_path / "model"))
    sample = tokenizer(splits["test"][0]["text"][:64], return_tensors="pt")["input_ids"]  # (1, 64)
    model.eval()
    with torch.no_grad():
        expected = model(sample).logits
        for loaded in (
            AutoModelForCausalLM.from_pretrained(tmp_path / "model"),
            AutoModelForCausalLM.from_pretrained(tmp_path / "model", trust_remote_code=True),
        ):
            torch.testing.assert_close(loaded.eval()(sample).logits, expected, rtol=0, atol=0)
