"""The distillation task: the classifier's data and batching, a frozen teacher and a student
(:mod:`.recipe`), the teacher-logit cache, evaluation against the teacher, the student export.
The runner (:mod:`gan_accel.runner`) runs it."""

from __future__ import annotations

from ...engine import Hook
from ...errors import UserError
from ...runner import Output, Plan
from ..config import ClassifierDataArguments, ClassifierTrainArguments
from ..data import ClassificationData, encode_data, read_labelled_rows
from ..model import schedule_length
from ..train import MODEL_CHECK, ClassifierTrainer
from .config import DistillArguments, DistillModelArguments
from .evaluation import DistillEvaluator
from .networks import load_networks
from .recipe import DistillRecipe, TeacherLogits
from .teacher import CACHE_FILE, IndexedDataset, fill_logit_cache


class DistillTrainer(ClassifierTrainer):
    """The classifier's data, batching and schedule checks; its own networks, recipe and evaluation."""

    project = "distill"
    command = "distill-classifier"
    desc = "distil"
    configs = {
        "data_args": ClassifierDataArguments,
        "model_args": DistillModelArguments,
        "distill_args": DistillArguments,
        "args": ClassifierTrainArguments,
    }
    outputs = (
        Output("model", label="student", checked=MODEL_CHECK),
        Output("eval_results.json", label="results"),
        Output(
            CACHE_FILE,
            "cache",
            checked="hash of its logits; rebuilt when the teacher's weights (by hash), "
            "the token ids, --max_length or the padding differ",
        ),
    )

    def check_settings(self) -> None:
        if self.args.local_sgd_steps:
            raise UserError("--local_sgd_steps is not supported by distillation; leave it at 0")

    def read_data(self) -> None:
        """Files, teacher and student: a bad file, label set or vocabulary fails before the run
        folder is touched."""
        from accelerate.utils import set_seed

        raw = read_labelled_rows(self.data_args)
        self.raw = raw
        set_seed(self.run_args.seed)  # a student checkpoint with another head gets a fresh one, drawn from this
        # --max_length is checked against both tokenizers and both models before any weights load.
        self.nets = load_networks(
            self.model_args,
            raw.label_names,
            self.distill_args.alpha_cos,
            self.data_args.max_length,
            pair=bool(self.data_args.text_pair_column),
        )
        self.tokenizer = self.nets.tokenizer
        data = encode_data(raw, self.data_args, self.tokenizer)
        self.data = ClassificationData(IndexedDataset(data.train), data.validation, data.label_names)

    def check_max_length(self) -> None:
        """Done in read_data: load_networks checks both tokenizers and models before any weights load."""

    def build(self) -> Plan:
        acc = self.accelerator
        train_dl, eval_dl, _ = self.loaders()
        self.collate = train_dl.collate_fn
        # Sized from the UNPREPARED loader: the engine converts updates into scheduler ticks.
        length = schedule_length(
            len(train_dl), acc.num_processes, self.args, self.run_args.gradient_accumulation_steps
        )
        self.cache = TeacherLogits()
        recipe = DistillRecipe(self.distill_args, self.args, length, self.cache)
        self.run.print(
            f"labels: {self.data.label_names}  train: {len(self.data.train)}  validation: "
            f"{len(self.data.validation)}  optimizer updates: {length.total_updates} "
            f"(warm-up {length.warmup_updates})"
        )
        return Plan(
            recipe.recipe({"student": self.nets.student, "teacher": self.nets.teacher}),
            train_dl,
            length.total_updates,
            eval_loaders=[eval_dl],
        )

    def hooks(self) -> list:
        args = self.distill_args
        self.record = {"cache_teacher_logits": args.cache_teacher_logits, "label_names": self.data.label_names}
        if args.cache_teacher_logits and args.alpha_kd > 0:
            settings = {
                "max_length": self.data_args.max_length,
                "pad_to_multiple_of": self.data_args.padding_multiple(self.accelerator.device.type),
            }
            self.cache.logits, record = fill_logit_cache(
                self.engine, self.data, self.collate, self.args.eval_batch_size or 2 * self.args.batch_size, settings
            )
            self.record.update(record)
        self.evaluator = DistillEvaluator(
            self.engine,
            self.tokenizer,
            self.engine.eval_loaders[0],
            len(self.data.label_names),
            self.args.metric_for_best_model,
            self.args.greater_is_better,
        )
        return [Hook(self.evaluator, every=self.args.eval_every, at_end=True, at_epoch_end=True)]

    def train_engine(self) -> bool:
        # The runner's plain loop, not the classifier's local-SGD wrapper (refused in check_settings).
        return self.engine.train()

    def export(self) -> None:
        examples = self.validation_examples(self.engine.nets.student)  # the final student's
        self.evaluator.write_results({**self.record, "train_seconds": self.train_seconds, "examples": examples})


def train_distill(*configs, on_update=None):
    """Distil and export the student; returns the finished run (``.output_dir``)."""
    task = DistillTrainer(*configs, on_update=on_update)
    task.train()
    return task.run
