"""``PredictionKeys``: the keys of the canned heads' predictions, as TF 1.15's."""


class PredictionKeys:
    """Prediction key strings."""

    CLASSES = "classes"
    CLASS_IDS = "class_ids"
    ALL_CLASSES = "all_classes"
    ALL_CLASS_IDS = "all_class_ids"
    LOGISTIC = "logistic"
    LOGITS = "logits"
    PREDICTIONS = "predictions"
    PROBABILITIES = "probabilities"
