"""TF 1.15's ``tf.contrib``, as its ``__init__`` files listed it: the modules, the
public names of those :mod:`zoo.compat.contrib` maps, and the nearest replacement
of well-known ones it does not provide. Data only, no TensorFlow.
"""

# Every module of TF 1.15's tf.contrib (tensorflow/contrib/__init__.py).
MODULES = frozenset(
    """
autograph batching bayesflow checkpoint cloud cluster_resolver compiler
constrained_optimization copy_graph crf cudnn_rnn data deprecated distribute
distributions eager estimator factorization feature_column ffmpeg framework gan
graph_editor grid_rnn image input_pipeline integrate keras kernel_methods
labeled_tensor layers learn legacy_seq2seq linear_optimizer lookup losses
memory_stats metrics mixed_precision model_pruning nn opt optimizer_v2
periodic_resample predictor proto quantization quantize receptive_field recurrent
reduce_slice_ops remote_fused_graph resampler rnn rpc saved_model seq2seq signal
slim solvers sparsemax specs staging stat_summarizer stateless summary
tensor_forest tensorboard testing tfprof timeseries tpu training util
""".split()
)

# TF 1.15's tf.contrib packages its __init__ did not import: programs reach them by
# path (``from tensorflow.contrib.boosted_trees.estimator_batch import estimator``).
PACKAGES = frozenset("all_reduce boosted_trees mpi_collectives nccl".split())

# The public names of each module the map provides, in TF 1.15 (its @@ lines and
# _allowed_symbols); a module missing here (slim, tpu) has its provider's names.
NAMES = {
    "layers": frozenset("""
        avg_pool2d avg_pool3d batch_norm bias_add conv1d conv2d conv3d convolution
        convolution1d convolution2d convolution3d conv2d_in_plane
        convolution2d_in_plane conv2d_transpose convolution2d_transpose
        conv3d_transpose convolution3d_transpose dense_to_sparse dropout elu
        embedding_lookup_unique flatten fully_connected GDN gdn images_to_sequence
        layer_norm linear max_pool2d max_pool3d one_hot_encoding relu relu6 repeat
        recompute_grad RevBlock rev_block safe_embedding_lookup_sparse
        scale_gradient separable_conv2d separable_convolution2d sequence_to_images
        softmax spatial_softmax stack unit_norm bow_encoder embed_sequence maxout
        apply_regularization l1_l2_regularizer l1_regularizer l2_regularizer
        sum_regularizer xavier_initializer xavier_initializer_conv2d
        variance_scaling_initializer optimize_loss summarize_activation
        summarize_tensor summarize_tensors summarize_collection summarize_activations
        bucketized_column check_feature_columns create_feature_spec_for_parsing
        crossed_column embedding_column scattered_embedding_column
        input_from_feature_columns transform_features
        joint_weighted_sum_from_feature_columns
        make_place_holder_tensors_for_base_features multi_class_target
        one_hot_column parse_feature_columns_from_examples
        parse_feature_columns_from_sequence_examples real_valued_column
        shared_embedding_columns sparse_column_with_hash_bucket
        sparse_column_with_integerized_feature sparse_column_with_keys
        sparse_column_with_vocabulary_file weighted_sparse_column
        weighted_sum_from_feature_columns infer_real_valued_columns
        sequence_input_from_feature_columns group_norm instance_norm feature_column
        legacy_fully_connected legacy_linear legacy_relu OPTIMIZER_CLS_NAMES
        OPTIMIZER_SUMMARIES regression_target SPARSE_FEATURE_CROSS_DEFAULT_HASH_KEY
        summaries
    """.split()),
    "framework": frozenset("""
        assert_same_float_dtype assert_scalar assert_scalar_int
        convert_to_tensor_or_sparse_tensor get_graph_from_inputs is_numeric_tensor
        is_non_decreasing is_strictly_increasing is_tensor reduce_sum_n
        remove_squeezable_dimensions with_shape with_same_shape deprecated
        deprecated_args deprecated_arg_values arg_scope add_arg_scope
        current_arg_scope has_arg_scope arg_scoped_arguments prepend_name_scope
        strip_name_scope add_model_variable assert_global_step
        assert_or_get_global_step assign_from_checkpoint assign_from_checkpoint_fn
        assign_from_values assign_from_values_fn create_global_step filter_variables
        fuse_op get_global_step get_or_create_global_step get_local_variables
        get_model_variables get_name_scope get_trainable_variables
        get_unique_variable get_variables_by_name get_variables_by_suffix
        get_variable_full_name get_variables_to_restore get_variables
        global_variable local_variable model_variable variable VariableDeviceChooser
        convolutional_delta_orthogonal convolutional_orthogonal_1d
        convolutional_orthogonal_2d convolutional_orthogonal_3d zero_initializer
        load_checkpoint list_variables load_variable init_from_checkpoint
        load_and_remap_matrix_initializer load_embedding_initializer
        load_linear_multiclass_bias_initializer load_variable_slot_initializer
        argsort py_func sort get_placeholders smart_cond smart_constant_value
        smart_case BoundedTensorSpec TensorSpec RecordInput nest
    """.split()),
    "training": frozenset("""
        batch_sequences_with_states NextQueuedSequenceBatch
        SequenceQueueingStateSaver rejection_sample resample_at_rate
        stratified_sample weighted_resample bucket bucket_by_sequence_length
        RandomStrategy GreedyLoadBalancingStrategy byte_size_load_fn
        FailureTolerator HParams HParamDef parse_values checkpoints_iterator
        evaluate_once evaluate_repeatedly FeedingQueueRunner get_or_create_eval_step
        StopAfterNEvalsHook SummaryAtEndHook wait_for_new_checkpoint
        add_gradients_summaries clip_gradient_norms clip_gradient_norms_fn
        create_train_op multiply_gradients train Tuner
    """.split()),
    "data": frozenset("""
        Counter CheckpointInputPipelineHook CsvDataset LMDBDataset Optional
        RandomDataset Reducer SqlDataset TFRecordWriter assert_element_shape
        batch_and_drop_remainder bucket_by_sequence_length choose_from_datasets
        copy_to_device dense_to_sparse_batch enumerate_dataset get_next_as_optional
        get_single_element group_by_reducer group_by_window ignore_errors
        latency_stats make_batched_features_dataset make_csv_dataset
        make_saveable_from_iterator map_and_batch padded_batch_and_drop_remainder
        parallel_interleave parse_example_dataset prefetch_to_device
        read_batch_features rejection_resample reduce_dataset sample_from_datasets
        scan set_stats_aggregator shuffle_and_repeat sliding_window_batch
        sloppy_interleave StatsAggregator unbatch unique AUTOTUNE
    """.split()),
    "lookup": frozenset("""
        string_to_index string_to_index_table_from_file
        string_to_index_table_from_tensor index_to_string index_table_from_file
        index_table_from_tensor index_to_string_table_from_file
        index_to_string_table_from_tensor LookupInterface
        InitializableLookupTableBase IdTableWithHashBuckets HashTable
        MutableHashTable MutableDenseHashTable TableInitializerBase
        KeyValueTensorInitializer TextFileIndex TextFileInitializer
        TextFileIdTableInitializer TextFileStringTableInitializer HasherSpec
        FastHashSpec StrongHashSpec
    """.split()),
    "rnn": frozenset("""
        RNNCell LayerRNNCell BasicRNNCell BasicLSTMCell GRUCell LSTMCell
        LSTMStateTuple DropoutWrapper MultiRNNCell DeviceWrapper ResidualWrapper
        EmbeddingWrapper InputProjectionWrapper OutputProjectionWrapper
        LayerNormBasicLSTMCell LSTMBlockWrapper LSTMBlockCell GRUBlockCell
        GRUBlockCellV2 FusedRNNCell FusedRNNCellAdaptor TimeReversedFusedRNN
        LSTMBlockFusedCell CoupledInputForgetGateLSTMCell TimeFreqLSTMCell
        GridLSTMCell BidirectionalGridLSTMCell NASCell UGRNNCell
        IntersectionRNNCell PhasedLSTMCell ConvLSTMCell Conv1DLSTMCell
        Conv2DLSTMCell Conv3DLSTMCell HighwayWrapper GLSTMCell IndRNNCell
        AttentionCellWrapper CompiledWrapper static_rnn static_state_saving_rnn
        static_bidirectional_rnn stack_bidirectional_dynamic_rnn
        stack_bidirectional_rnn transpose_batch_time best_effort_input_batch_size
    """.split()),
    "seq2seq": frozenset("""
        AttentionMechanism AttentionWrapper AttentionWrapperState BahdanauAttention
        BahdanauMonotonicAttention BasicDecoder BasicDecoderOutput BeamSearchDecoder
        BeamSearchDecoderOutput BeamSearchDecoderState CustomHelper Decoder
        FinalBeamSearchDecoderOutput GreedyEmbeddingHelper Helper InferenceHelper
        LuongAttention LuongMonotonicAttention SampleEmbeddingHelper
        ScheduledEmbeddingTrainingHelper ScheduledOutputTrainingHelper
        TrainingHelper dynamic_decode gather_tree hardmax monotonic_attention
        safe_cumprod sequence_loss tile_batch
    """.split()),
    "legacy_seq2seq": frozenset("""
        attention_decoder basic_rnn_seq2seq embedding_attention_decoder
        embedding_attention_seq2seq embedding_rnn_decoder embedding_rnn_seq2seq
        embedding_tied_rnn_seq2seq model_with_buckets one2many_rnn_seq2seq
        rnn_decoder sequence_loss sequence_loss_by_example tied_rnn_seq2seq
    """.split()),
    "learn": frozenset("""
        ModeKeys Estimator RunConfig Experiment learn_runner preprocessing datasets
        DNNClassifier DNNRegressor DNNLinearCombinedClassifier
        DNNLinearCombinedRegressor LinearClassifier LinearRegressor
        KMeansClustering ModelFnOps InputFnOps ProblemType MetricSpec SKCompat
        monitors infer_real_valued_columns_from_input read_batch_examples
        read_batch_features extract_pandas_data extract_pandas_labels
        extract_pandas_matrix
    """.split()),
    "crf": frozenset("""
        crf_sequence_score crf_log_norm crf_log_likelihood crf_unary_score
        crf_binary_score CrfForwardRnnCell viterbi_decode crf_decode
        CrfDecodeForwardRnnCell CrfDecodeBackwardRnnCell crf_multitag_sequence_score
        crf_forward
    """.split()),
    "learn.datasets": frozenset({"base", "mnist", "synthetic", "text_datasets",
                                 "load_dataset", "make_dataset", "DATASETS"}),
    "staging": frozenset({"StagingArea"}),
    "tensorboard.plugins.projector": frozenset({
        "ProjectorConfig", "EmbeddingInfo", "SpriteMetadata", "visualize_embeddings"}),
    "factorization": frozenset("""
        COSINE_DISTANCE GMM gmm GmmAlgorithm KMeans KMEANS_PLUS_PLUS_INIT KMC2_INIT
        KMeansClustering RANDOM_INIT SQUARED_EUCLIDEAN_DISTANCE
        WALSMatrixFactorization WALSModel
    """.split()),
}  # fmt: skip

# "module" or "module.name" -> the nearest replacement on TensorFlow 2.21.
REPLACEMENTS = {
    "cudnn_rnn": "tf.compat.v1.nn.rnn_cell.LSTMCell under zoo.compat.install() "
    "(the same math on CPU), or keras.layers.LSTM",
    "distributions": "tensorflow_probability.distributions",
    "bayesflow": "tensorflow_probability",
    "opt": "tf.compat.v1.train optimizers, or keras.optimizers (AdamW, Lion)",
    "losses": "tf.compat.v1.losses",
    "metrics": "tf.compat.v1.metrics",
    "image": "tf.image, or tensorflow_addons.image",
    "summary": "tf.compat.v1.summary",
    "cluster_resolver": "tf.distribute.cluster_resolver",
    "signal": "tf.signal",
    "keras": "keras",
    "eager": "TensorFlow 2's eager execution (tf.function)",
    "gan": "zoo.training.gan, or the tensorflow_gan package",
    "quantize": "tensorflow_model_optimization",
    "model_pruning": "tensorflow_model_optimization.sparsity",
    "mixed_precision": "zoo.training.precision, or keras.mixed_precision",
    "rnn.LSTMBlockFusedCell": "tf.contrib.rnn.LSTMCell in tf.nn.dynamic_rnn",
    "rnn.GRUBlockCell": "tf.contrib.rnn.GRUCell",
    "rnn.GRUBlockCellV2": "tf.contrib.rnn.GRUCell",
    "layers.feature_column": "tf.feature_column",
    "layers.real_valued_column": "tf.feature_column.numeric_column",
    "layers.embedding_column": "tf.feature_column.embedding_column",
    "learn.preprocessing": "keras.layers.TextVectorization, or a dict of words",
    "learn.Experiment": "tf.compat.v1.estimator.train_and_evaluate",
    "learn.learn_runner": "tf.compat.v1.estimator.train_and_evaluate",
    "learn.RunConfig": "tf.compat.v1.estimator.RunConfig",
    "learn.Estimator": "tf.compat.v1.estimator.Estimator",
    "data.batch_and_drop_remainder": "dataset.batch(n, drop_remainder=True)",
    "data.padded_batch_and_drop_remainder": "dataset.padded_batch(n, shapes, "
    "drop_remainder=True)",
    "data.sliding_window_batch": "dataset.window(size, shift).flat_map(...)",
    "data.sloppy_interleave": "dataset.interleave(..., deterministic=False)",
    "framework.get_name_scope": "tf.compat.v1.get_default_graph().get_name_scope()",
    "framework.smart_cond": "tf.cond",
    "training.HParamDef": "HParams(**values) and HParams.to_json()",
    "training.bucket_by_sequence_length": "tf.data.experimental."
    "bucket_by_sequence_length",
    **{f"learn.datasets.{name}": "tf.keras.datasets, or zoo.data (MNIST: "
       "tf.contrib.learn.datasets.mnist.read_data_sets)" for name in (
           "base", "synthetic", "text_datasets", "load_dataset", "make_dataset",
           "DATASETS")},
    "distribute": "tf.distribute (MirroredStrategy, ...), or zoo.parallel",
    "util": "tf.get_static_value (constant_value), tf.make_ndarray, tf.make_tensor_proto",
    "session_bundle": "tf.compat.v1.saved_model.load",
    "compiler": "tf.function(jit_compile=True)",
    "graph_editor": "tf.compat.v1.graph_util, or rebuild the graph",
    "tensor_forest": "the tensorflow_decision_forests package",
    "boosted_trees": "the tensorflow_decision_forests package",
    "linear_optimizer": "tf.compat.v1.estimator.LinearClassifier",
    "linalg": "tf.linalg",
    "tfprof": "tf.compat.v1.profiler",
    "nn": "tf.nn",
    **dict.fromkeys(("nccl", "all_reduce", "mpi_collectives"),
                    "tf.distribute's collective ops, or zoo.parallel"),
    **dict.fromkeys(("factorization.GMM", "factorization.gmm",
                     "factorization.GmmAlgorithm"),
                    "sklearn.mixture.GaussianMixture, or tensorflow_probability's "
                    "MixtureSameFamily fitted by an optimizer"),
    **dict.fromkeys(("factorization.WALSModel", "factorization.WALSMatrixFactorization"),
                    "a matrix factorization on tf.compat.v1.get_variable with an "
                    "optimizer, or the implicit package's AlternatingLeastSquares"),
}  # fmt: skip

# tf.contrib.estimator (its _allowed_symbols in TF 1.15) and tf.contrib.predictor
# (its __init__'s factories): what the map provides of them is in docs/estimator.md.
NAMES["estimator"] = frozenset("""
    add_metrics binary_classification_head clip_gradients_by_norm forward_features
    InMemoryEvaluatorHook make_stop_at_checkpoint_step_hook logistic_regression_head
    multi_class_head multi_head multi_label_head poisson_regression_head
    regression_head boosted_trees_classifier_train_in_memory
    boosted_trees_regressor_train_in_memory call_logit_fn dnn_logit_fn_builder
    linear_logit_fn_builder replicate_model_fn TowerOptimizer RNNClassifier
    RNNEstimator export_saved_model_for_mode export_all_saved_models
    make_early_stopping_hook read_eval_metrics stop_if_lower_hook stop_if_higher_hook
    stop_if_no_increase_hook stop_if_no_decrease_hook
    build_raw_supervised_input_receiver_fn
    build_supervised_input_receiver_fn_from_input_fn SavedModelEstimator
    DNNClassifierWithLayerAnnotations DNNRegressorWithLayerAnnotations
    DNNEstimator DNNLinearCombinedEstimator LinearEstimator
""".split())
NAMES["predictor"] = frozenset(["from_contrib_estimator", "from_estimator",
                                "from_saved_model"])  # fmt: skip
OWN_MODEL_FN = "a model_fn of your own (tf.compat.v1.layers, then EstimatorSpec)"
REPLACEMENTS.update({
    "estimator.poisson_regression_head": "tf.nn.log_poisson_loss in " + OWN_MODEL_FN,
    "estimator.logistic_regression_head": "tf.contrib.estimator."
    "binary_classification_head",
    "estimator.make_stop_at_checkpoint_step_hook": "tf.estimator.StopAtStepHook",
    "estimator.boosted_trees_classifier_train_in_memory": "tensorflow_decision_forests",
    "estimator.boosted_trees_regressor_train_in_memory": "tensorflow_decision_forests",
    "estimator.call_logit_fn": OWN_MODEL_FN,
    "estimator.RNNClassifier": "tf.nn.dynamic_rnn in " + OWN_MODEL_FN,
    "estimator.RNNEstimator": "tf.nn.dynamic_rnn in " + OWN_MODEL_FN,
    "estimator.export_saved_model_for_mode": "Estimator.export_saved_model(..., "
    "experimental_mode=...)",
    "estimator.export_all_saved_models": "Estimator.export_saved_model",
    "estimator.build_raw_supervised_input_receiver_fn": "tf.estimator.export."
    "build_raw_serving_input_receiver_fn",
    "estimator.build_supervised_input_receiver_fn_from_input_fn": "tf.estimator.export."
    "build_raw_serving_input_receiver_fn",
    "estimator.SavedModelEstimator": "tf.contrib.predictor.from_saved_model",
    "estimator.DNNClassifierWithLayerAnnotations": "tf.estimator.DNNClassifier",
    "estimator.DNNRegressorWithLayerAnnotations": "tf.estimator.DNNRegressor",
    "predictor.from_contrib_estimator": "tf.contrib.predictor.from_estimator "
    "(tf.contrib.learn's Estimator is not provided)",
})  # fmt: skip
