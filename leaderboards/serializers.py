from rest_framework import serializers


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True)
    method = serializers.CharField()
    team = serializers.CharField()
    date = serializers.CharField(allow_null=True)
    url = serializers.CharField(allow_blank=True)
    scores = serializers.DictField(child=serializers.FloatField(allow_null=True))
    ci = serializers.DictField(child=serializers.ListField(child=serializers.FloatField(), allow_null=True),
                               allow_null=True)
    reported = serializers.BooleanField()
    kind = serializers.CharField()
    source = serializers.CharField(allow_blank=True)  # type: ignore[assignment]  # a declared field, not Field.source
    note = serializers.CharField(allow_blank=True, required=False, help_text="how a reported number differs from ours")
    submission_id = serializers.IntegerField(allow_null=True)
    tier = serializers.IntegerField(allow_null=True, help_text="significance tier (1 = top); null for reported rows")
    fails = serializers.IntegerField(allow_null=True, required=False, help_text="QUACKIE: samples that failed")
    no_snr = serializers.IntegerField(allow_null=True, required=False,
                                      help_text="QUACKIE: samples without an SNR (no signal or no noise sentence)")
    unranked_reason = serializers.CharField(allow_blank=True, required=False,
                                            help_text="why a scored entry has no rank (empty when it is ranked)")
    baseline = serializers.BooleanField(required=False, help_text="a published or built-in baseline")
    p_vs_leader = serializers.FloatField(allow_null=True, required=False,
                                         help_text="paired p-value against the first entry of its tier")
    p_adjusted = serializers.FloatField(allow_null=True, required=False,
                                        help_text="p_vs_leader corrected for comparing against the best of several")
    p_vs_above = serializers.FloatField(
        allow_null=True, help_text="paired sign-flip p-value against the scored entry ranked just above")
    system = serializers.CharField(required=False, help_text="the system the entry belongs to (its user's grouping)")
    verified = serializers.BooleanField(required=False, help_text="checked by the maintainers")
    stale = serializers.BooleanField(required=False,
                                     help_text="scored by an older scorer version than the task's; to be re-scored")
    rescoring = serializers.BooleanField(required=False,
                                         help_text="being re-scored now; the scores shown are its previous ones")
    dev_set_use = serializers.CharField(required=False, help_text="declared use of the task's dev set for training: "
                                        "none, part or whole (part or whole: marked with * on the board)")
    external_data = serializers.CharField(required=False, allow_blank=True,
                                          help_text="declared external human-annotated data (empty: none)")
    code_url = serializers.CharField(required=False, allow_blank=True)
    paper_url = serializers.CharField(required=False, allow_blank=True)
    phase = serializers.CharField(required=False, allow_blank=True, help_text="the phase of the upload, if any")


class LeaderboardSerializer(serializers.Serializer):
    task = serializers.CharField()
    primary_metric = serializers.CharField()
    test_set_version = serializers.CharField(allow_null=True)
    count = serializers.IntegerField(help_text="rows on the whole board")
    next = serializers.URLField(allow_null=True, help_text="the next page, or null on the last")
    previous = serializers.URLField(allow_null=True, help_text="the previous page, or null on the first")
    sort = serializers.CharField(help_text="the key the rows are in the order of")
    order = serializers.ChoiceField(choices=["asc", "desc"])
    results = LeaderboardRowSerializer(many=True, help_text="this page's rows (under `rows` on the deprecated "
                                                            "unversioned path)")


class AverageRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True)
    method = serializers.CharField()
    team = serializers.CharField()
    per_task = serializers.DictField(child=serializers.FloatField(allow_null=True),
                                     help_text="task slug -> the task's primary metric")
    average = serializers.FloatField()
    reported = serializers.BooleanField()
    kind = serializers.CharField(help_text="human or submission")
    submission_ids = serializers.DictField(child=serializers.IntegerField(), required=False,
                                           help_text="task slug -> the submission that counts")


class BenchmarkLeaderboardSerializer(serializers.Serializer):
    tasks = serializers.ListField(child=serializers.CharField(), help_text="the tasks averaged over")
    count = serializers.IntegerField(help_text="rows on the board")
    next = serializers.URLField(allow_null=True, help_text="always null: the board is one page")
    previous = serializers.URLField(allow_null=True, help_text="always null: the board is one page")
    results = AverageRowSerializer(many=True, help_text="the rows (under `rows`, without count, next and "
                                                        "previous, on the deprecated unversioned path)")


class EntrySummarySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    method = serializers.CharField()
    team = serializers.CharField()
    task = serializers.CharField()
    kind = serializers.CharField()
    test_set_version = serializers.CharField()
    scores = serializers.DictField(child=serializers.FloatField(allow_null=True))
    ci = serializers.DictField(child=serializers.ListField(child=serializers.FloatField()), allow_null=True)


class MetricComparisonSerializer(serializers.Serializer):
    metric = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a declared field, not Field.label
    a = serializers.FloatField(allow_null=True)
    b = serializers.FloatField(allow_null=True)
    difference = serializers.FloatField(allow_null=True, help_text="a - b")


class ComparisonSerializer(serializers.Serializer):
    a = EntrySummarySerializer()
    b = EntrySummarySerializer()
    same_test_set = serializers.BooleanField()
    metrics = MetricComparisonSerializer(many=True)
    paired = serializers.DictField(help_text="the paired test on the primary metric: applicable, p_value, "
                                             "significant, test (or a note when not applicable)")
    skills = serializers.ListField(child=serializers.DictField(), required=False,
                                   help_text="skill gaps side by side (span tasks with skill sets)")
    checklist = serializers.DictField(required=False, help_text="CheckList tests and capabilities side by side")
    question_types = serializers.ListField(child=serializers.DictField(), required=False)
    icq = serializers.ListField(child=serializers.DictField(), required=False, help_text="ICQ cues side by side")
