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


class LeaderboardSerializer(serializers.Serializer):
    task = serializers.CharField()
    primary_metric = serializers.CharField()
    test_set_version = serializers.CharField(allow_null=True)
    rows = LeaderboardRowSerializer(many=True)
