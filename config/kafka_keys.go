package config

// This file extends the broker key table (broker_keys.go) with every other
// key Apache Kafka 4.4.0's DescribeConfigs lists for a broker
// (compat/testdata/kafka-4.4.0-configs.txt): names, types, defaults, update
// modes and, for the inert keys, value ranges are Kafka's (a refused key
// accepts only its default); the doc strings are sluice's own. None of them is
// enforced; each is either inert (the feature cannot apply in sluice) or
// refused with "not supported yet" and the issue that builds it (keys.go:
// keyDef.inert, keyDef.later). KEYS.md lists them with their status.

// Why the inert keys below cannot act in sluice.
const (
	whyKerberos   = "sluice has no SASL/GSSAPI (Kerberos) mechanism, so no Kerberos setting can act"
	whyKRaft      = "sluice's metadata quorum is hashicorp/raft with its own timeouts, log and snapshots, not KRaft"
	whyPurgatory  = "sluice has no purgatories: a waiting request is a goroutine with a timer, nothing to purge"
	whyJavaPlugin = "a Java plugin class or provider, which sluice cannot load; a built-in equivalent has no issue yet"
	whyJavaTLS    = "Java's key and trust manager factories; Go's crypto/tls has one of each"
	// whyNoDynamicKeystore: sluice reads the ssl.* keys at start only, so
	// no keystore is ever altered dynamically; a changed keystore file is
	// reloaded as it is.
	whyNoDynamicKeystore = "the ssl.* keys are read at start only, so no keystore is altered dynamically; a keystore file that changes is reloaded as it is"
	// whyOAuthLogin is not an inert reason: the broker's own OAUTHBEARER
	// login (inter-broker OAUTHBEARER) is not built yet.
	whyOAuthLogin = "the broker's own OAUTHBEARER login, for OAUTHBEARER between brokers"
	// whyYammerPolling, whySensorWindows and whyRecordingLevel are not
	// inert reasons: no issue builds them yet.
	whyYammerPolling  = "the polling interval of kafka.metrics.reporters, Java plugin classes sluice cannot load"
	whySensorWindows  = "Kafka's windowed metric sensors (rates and averages over sample windows); sluice's metrics endpoint exposes counters and histograms and leaves rates to Prometheus"
	whyRecordingLevel = "Kafka's DEBUG and TRACE metric sensors; sluice records every metric it has at INFO"
	// whyReplicationWindow is not an inert reason: no issue builds it yet.
	whyReplicationWindow = "the replication throttle measured over Kafka's sample windows; sluice's leader/follower.replication.throttled.rate is a token bucket holding one second of the rate"
)

// oauthValidatorClasses are the names sasl.server.callback.handler.class
// may take: Kafka's JWKS validator, under its current and its pre-3.4
// package.
var oauthValidatorClasses = []string{
	"org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
	"org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
}

// kafkaOnlyKeys are the broker keys of Kafka 4.4 that sluice does not act on.
var kafkaOnlyKeys = []keyDef{
	// Kerberos (SASL/GSSAPI): sluice has no GSSAPI mechanism, so these can never act.
	bk("sasl.kerberos.kinit.cmd", TypeString, v("/usr/bin/kinit"), pb, "Kerberos (SASL/GSSAPI) login setting.").inert(whyKerberos),
	bk("sasl.kerberos.min.time.before.relogin", TypeLong, v("60000"), pb, "Kerberos (SASL/GSSAPI) login setting.").inert(whyKerberos),
	bk("sasl.kerberos.principal.to.local.rules", TypeList, v("DEFAULT"), pb, "Kerberos (SASL/GSSAPI) login setting.").inert(whyKerberos),
	bk("sasl.kerberos.service.name", TypeString, nil, pb, "Kerberos (SASL/GSSAPI) login setting.").inert(whyKerberos),
	bk("sasl.kerberos.ticket.renew.jitter", TypeDouble, v("0.05"), pb, "Kerberos (SASL/GSSAPI) login setting.").inert(whyKerberos),
	bk("sasl.kerberos.ticket.renew.window.factor", TypeDouble, v("0.8"), pb, "Kerberos (SASL/GSSAPI) login setting.").inert(whyKerberos),
	// KRaft's quorum and metadata log: sluice's metadata quorum is hashicorp/raft, with its own timeouts, log and snapshots.
	bk("controller.quorum.append.linger.ms", TypeInt, v("25"), ro, "KRaft metadata quorum or metadata log setting.", atLeast(0)).inert(whyKRaft),
	bk("controller.quorum.auto.join.enable", TypeBoolean, v("false"), ro, "KRaft metadata quorum or metadata log setting.").inert(whyKRaft),
	bk("controller.quorum.election.backoff.max.ms", TypeInt, v("1000"), ro, "KRaft metadata quorum or metadata log setting.", atLeast(0)).inert(whyKRaft),
	bk("controller.quorum.election.timeout.ms", TypeInt, v("1000"), ro, "KRaft metadata quorum or metadata log setting.", atLeast(0)).inert(whyKRaft),
	bk("controller.quorum.fetch.max.bytes", TypeInt, v("1048576"), ro, "KRaft metadata quorum or metadata log setting.", atLeast(1)).inert(whyKRaft),
	bk("controller.quorum.fetch.snapshot.max.bytes", TypeInt, v("1048576"), ro, "KRaft metadata quorum or metadata log setting.", atLeast(1)).inert(whyKRaft),
	bk("controller.quorum.fetch.timeout.ms", TypeInt, v("2000"), ro, "KRaft metadata quorum or metadata log setting.", atLeast(0)).inert(whyKRaft),
	bk("controller.quorum.request.timeout.ms", TypeInt, v("2000"), ro, "KRaft metadata quorum or metadata log setting.", atLeast(0)).inert(whyKRaft),
	bk("controller.quorum.retry.backoff.ms", TypeInt, v("20"), ro, "KRaft metadata quorum or metadata log setting.", atLeast(0)).inert(whyKRaft),
	bk("controller.socket.timeout.ms", TypeInt, v("30000"), ro, "KRaft metadata quorum or metadata log setting.").inert(whyKRaft),
	bk("metadata.log.max.record.bytes.between.snapshots", TypeLong, v("20971520"), ro, "KRaft metadata quorum or metadata log setting.", atLeast(1)).inert(whyKRaft),
	bk("metadata.log.max.snapshot.interval.ms", TypeLong, v("3600000"), ro, "KRaft metadata quorum or metadata log setting.", atLeast(0)).inert(whyKRaft),
	bk("metadata.log.segment.bytes", TypeInt, v("1073741824"), ro, "KRaft metadata quorum or metadata log setting.", atLeast(8388608)).inert(whyKRaft),
	bk("metadata.log.segment.ms", TypeLong, v("604800000"), ro, "KRaft metadata quorum or metadata log setting.").inert(whyKRaft),
	bk("metadata.max.idle.interval.ms", TypeInt, v("500"), ro, "KRaft metadata quorum or metadata log setting.", atLeast(0)).inert(whyKRaft),
	bk("metadata.max.retention.bytes", TypeLong, v("104857600"), ro, "KRaft metadata quorum or metadata log setting.").inert(whyKRaft),
	bk("metadata.max.retention.ms", TypeLong, v("604800000"), ro, "KRaft metadata quorum or metadata log setting.").inert(whyKRaft),
	// Purgatories: sluice has none.
	bk("delete.records.purgatory.purge.interval.requests", TypeInt, v("1"), ro, "Requests between purges of a delayed-operation purgatory.").inert(whyPurgatory),
	bk("fetch.purgatory.purge.interval.requests", TypeInt, v("1000"), ro, "Requests between purges of a delayed-operation purgatory.").inert(whyPurgatory),
	bk("producer.purgatory.purge.interval.requests", TypeInt, v("1000"), ro, "Requests between purges of a delayed-operation purgatory.").inert(whyPurgatory),
	bk("share.fetch.purgatory.purge.interval.requests", TypeInt, v("1000"), ro, "Requests between purges of a delayed-operation purgatory.").inert(whyPurgatory),
	// The group coordinator runtime.
	bk("group.coordinator.background.threads", TypeInt, v("2"), ro, "Threads of the group coordinator's background work.", atLeast(1)).inert("sluice's group coordinator runs its background work on goroutines, not a thread pool"),
	bk("group.coordinator.cached.buffer.max.bytes", TypeInt, v("1048588"), cw, "Largest write buffer the group coordinator keeps cached for reuse.", atLeast(524288)).inert("sluice's group coordinator has no cached write buffer"),
	// TLS listeners (issue 19): read at start, so read-only here although
	// Kafka can alter most of them per broker; security/tls.go reloads the
	// files they name when the files change.
	bk("ssl.allow.dn.changes", TypeBoolean, v("false"), ro, "Whether a keystore altered dynamically may change its subject's distinguished name.").inert(whyNoDynamicKeystore),
	bk("ssl.allow.san.changes", TypeBoolean, v("false"), ro, "Whether a keystore altered dynamically may change its subject alternative names.").inert(whyNoDynamicKeystore),
	bk("ssl.cipher.suites", TypeList, v(""), ro, "TLS cipher suites (IANA names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) the listeners and inter-broker clients allow. Empty: Go's defaults. TLS 1.3's suites are not configurable in Go."),
	bk("ssl.client.auth", TypeString, v("none"), ro, "Whether TLS clients must present a certificate: required, requested or none. The certificate's subject, mapped by ssl.principal.mapping.rules, is the principal of an SSL connection.", oneOf("required", "requested", "none")),
	bk("ssl.enabled.protocols", TypeList, v("TLSv1.2,TLSv1.3"), ro, "TLS versions the listeners and inter-broker clients allow.", eachOf("TLSv1.2", "TLSv1.3", "TLSv1.1", "TLSv1")),
	bk("ssl.endpoint.identification.algorithm", TypeString, v("https"), ro, "How a broker checks the certificate of a peer it dials over an SSL or SASL_SSL inter-broker listener: https checks the host name, empty does not.", oneOf("https", "HTTPS", "")),
	bk("ssl.engine.factory.class", TypeClass, nil, pb, "Plugin class creating the TLS engines.").later(0, whyJavaPlugin),
	bk("ssl.key.password", TypePassword, nil, ro, "Password of the private key in the keystore (PKCS12, or an encrypted PEM key)."),
	bk("ssl.keymanager.algorithm", TypeString, v("SunX509"), pb, "Java key manager factory algorithm.").inert(whyJavaTLS),
	bk("ssl.keystore.certificate.chain", TypePassword, nil, ro, "The certificate chain, PEM text, with ssl.keystore.type=PEM and no ssl.keystore.location."),
	bk("ssl.keystore.key", TypePassword, nil, ro, "The private key, PEM text, with ssl.keystore.type=PEM and no ssl.keystore.location."),
	bk("ssl.keystore.location", TypeString, nil, ro, "Keystore file of the TLS listeners (PKCS12, or PEM with the key and the certificate chain); reloaded when it changes."),
	bk("ssl.keystore.password", TypePassword, nil, ro, "Password of the keystore file."),
	bk("ssl.keystore.type", TypeString, v("JKS"), ro, "Keystore format: PKCS12 or PEM. A JKS file is refused at start with how to convert it (keytool -importkeystore -deststoretype PKCS12); a PKCS12 file is read under Kafka's default JKS, as Java reads it.", oneOf("JKS", "PKCS12", "PEM")),
	bk("ssl.principal.mapping.rules", TypeString, v("DEFAULT"), ro, "Rules mapping a client certificate's distinguished name to a principal name (Kafka's RULE:pattern/replacement/[LU] list)."),
	bk("ssl.protocol", TypeString, v("TLSv1.3"), ro, "Highest TLS version a broker offers when it dials a peer's SSL or SASL_SSL inter-broker listener (TLSv1.2 or TLSv1.3); what a listener accepts is ssl.enabled.protocols.", oneOf("TLSv1.2", "TLSv1.3")),
	bk("ssl.provider", TypeString, nil, pb, "Java security provider of the TLS engine.").later(0, whyJavaPlugin),
	bk("ssl.secure.random.implementation", TypeString, nil, pb, "Java SecureRandom implementation for TLS.").inert("Go's crypto/tls draws from crypto/rand, the operating system's generator"),
	bk("ssl.trustmanager.algorithm", TypeString, v("PKIX"), pb, "Java trust manager factory algorithm.").inert(whyJavaTLS),
	bk("ssl.truststore.certificates", TypePassword, nil, ro, "Trusted certificates, PEM text, with ssl.truststore.type=PEM and no ssl.truststore.location."),
	bk("ssl.truststore.location", TypeString, nil, ro, "Truststore file (PKCS12, or PEM certificates): the CAs that sign client certificates and, for inter-broker clients, the peers' certificates; reloaded when it changes."),
	bk("ssl.truststore.password", TypePassword, nil, ro, "Password of the truststore file."),
	bk("ssl.truststore.type", TypeString, v("JKS"), ro, "Truststore format: PKCS12 or PEM. A JKS file is refused at start with how to convert it (keytool -importkeystore -deststoretype PKCS12); a PKCS12 file is read under Kafka's default JKS, as Java reads it.", oneOf("JKS", "PKCS12", "PEM")),
	// SASL authentication (issue 19).
	bk("sasl.client.callback.handler.class", TypeClass, nil, ro, "Plugin class handling the callbacks of the broker's own SASL logins.").later(0, whyJavaPlugin),
	bk("sasl.enabled.mechanisms", TypeList, v("GSSAPI"), ro, "SASL mechanisms the SASL listeners offer: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER. Kafka's default GSSAPI (Kerberos) is refused at start when a SASL listener would offer it.", eachOf("GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")),
	bk("sasl.jaas.config", TypePassword, nil, ro, "JAAS login configuration. A broker reads it only per listener and mechanism, as listener.name.<listener>.<mechanism>.sasl.jaas.config (Kafka ignores the unprefixed key on a broker; sluice refuses it)."),
	bk("sasl.login.callback.handler.class", TypeClass, nil, ro, "Plugin class handling the callbacks of the broker's own SASL login.").later(0, whyJavaPlugin),
	bk("sasl.login.class", TypeClass, nil, ro, "Plugin class of the broker's own SASL login.").later(0, whyJavaPlugin),
	bk("sasl.login.connect.timeout.ms", TypeInt, nil, ro, "SASL/OAUTHBEARER login setting of the broker itself.").later(0, whyOAuthLogin),
	bk("sasl.login.read.timeout.ms", TypeInt, nil, ro, "SASL/OAUTHBEARER login setting of the broker itself.").later(0, whyOAuthLogin),
	bk("sasl.login.refresh.buffer.seconds", TypeShort, v("300"), pb, "SASL/OAUTHBEARER login setting of the broker itself.").later(0, whyOAuthLogin),
	bk("sasl.login.refresh.min.period.seconds", TypeShort, v("60"), pb, "SASL/OAUTHBEARER login setting of the broker itself.").later(0, whyOAuthLogin),
	bk("sasl.login.refresh.window.factor", TypeDouble, v("0.8"), pb, "SASL/OAUTHBEARER login setting of the broker itself.").later(0, whyOAuthLogin),
	bk("sasl.login.refresh.window.jitter", TypeDouble, v("0.05"), pb, "SASL/OAUTHBEARER login setting of the broker itself.").later(0, whyOAuthLogin),
	bk("sasl.login.retry.backoff.max.ms", TypeLong, v("10000"), ro, "SASL/OAUTHBEARER login setting of the broker itself.").later(0, whyOAuthLogin),
	bk("sasl.login.retry.backoff.ms", TypeLong, v("100"), ro, "SASL/OAUTHBEARER login setting of the broker itself.").later(0, whyOAuthLogin),
	bk("sasl.mechanism.controller.protocol", TypeString, v("GSSAPI"), ro, "SASL mechanism towards the controllers.").later(0, "SASL authentication"),
	bk("sasl.mechanism.inter.broker.protocol", TypeString, v("GSSAPI"), ro, "SASL mechanism a broker logs in with on a SASL inter-broker listener (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512), with the username and password of that listener's listener.name.<listener>.<mechanism>.sasl.jaas.config.", oneOf("GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")),
	bk("sasl.server.callback.handler.class", TypeClass, nil, ro, "Server callback handler of a mechanism. sluice accepts only OAuthBearerValidatorCallbackHandler, as listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class, which turns on JWKS validation of OAUTHBEARER tokens.", oneOf(oauthValidatorClasses...)),
	bk("sasl.server.max.receive.size", TypeInt, v("524288"), ro, "SASL authentication setting.").later(0, "SASL authentication"),
	// SASL/OAUTHBEARER: issue 19.
	bk("sasl.oauthbearer.allow.unverified.audience", TypeBoolean, v("false"), ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.allow.unverified.issuer", TypeBoolean, v("false"), ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.assertion.algorithm", TypeString, v("RS256"), ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.assertion.claim.aud", TypeString, nil, ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.assertion.claim.exp.seconds", TypeInt, v("300"), ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.assertion.claim.iss", TypeString, nil, ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.assertion.claim.jti.include", TypeBoolean, v("false"), ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.assertion.claim.nbf.seconds", TypeInt, v("60"), ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.assertion.claim.sub", TypeString, nil, ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.assertion.file", TypeString, nil, ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.assertion.private.key.file", TypeString, nil, ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.assertion.private.key.passphrase", TypePassword, nil, ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.assertion.template.file", TypeString, nil, ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.client.credentials.client.id", TypeString, nil, ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.client.credentials.client.secret", TypePassword, nil, ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.clock.skew.seconds", TypeInt, v("30"), ro, "Seconds of clock difference allowed when an OAUTHBEARER token's exp, iat and nbf are checked.", atLeast(0)),
	bk("sasl.oauthbearer.expected.audience", TypeList, v(""), ro, "Audiences an OAUTHBEARER token checked against the JWKS must name one of (its aud claim); empty: not checked."),
	bk("sasl.oauthbearer.expected.issuer", TypeString, nil, ro, "Issuer an OAUTHBEARER token checked against the JWKS must name (its iss claim); unset: not checked."),
	bk("sasl.oauthbearer.jwks.endpoint.refresh.ms", TypeLong, v("3600000"), ro, "How long keys fetched from sasl.oauthbearer.jwks.endpoint.url are used before they are fetched again; a token signed with a key id the set lacks fetches it sooner.", atLeast(1)),
	bk("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", TypeLong, v("10000"), ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", TypeLong, v("100"), ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.jwks.endpoint.url", TypeString, nil, ro, "Where the keys that sign OAUTHBEARER tokens are published (https://… or file://…). With listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class set to OAuthBearerValidatorCallbackHandler, tokens are checked against these keys; otherwise Kafka's default unsecured validator checks them (alg none)."),
	bk("sasl.oauthbearer.jwt.retriever.class", TypeClass, v("org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever"), ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.jwt.validator.class", TypeClass, v("org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator"), ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.scope", TypeString, nil, ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	bk("sasl.oauthbearer.scope.claim.name", TypeString, v("scope"), ro, "Claim of an OAUTHBEARER token holding its scope."),
	bk("sasl.oauthbearer.sub.claim.name", TypeString, v("sub"), ro, "Claim of an OAUTHBEARER token naming its principal."),
	bk("sasl.oauthbearer.token.endpoint.url", TypeString, nil, ro, "SASL/OAUTHBEARER login or token validation setting.").later(0, "SASL/OAUTHBEARER"),
	// Delegation tokens: issue 19.
	bk("delegation.token.expiry.check.interval.ms", TypeLong, v("3600000"), ro, "Delegation token setting.").later(0, "delegation tokens"),
	bk("delegation.token.expiry.time.ms", TypeLong, v("86400000"), ro, "Delegation token setting.").later(0, "delegation tokens"),
	bk("delegation.token.max.lifetime.ms", TypeLong, v("604800000"), ro, "Delegation token setting.").later(0, "delegation tokens"),
	bk("delegation.token.secret.key", TypePassword, nil, ro, "Delegation token setting.").later(0, "delegation tokens"),
	// ACLs and principals: issue 19.
	bk("authorizer.class.name", TypeString, v(""), ro, "Authorizer of requests: org.apache.kafka.metadata.authorizer.StandardAuthorizer (or the legacy kafka.security.authorizer.AclAuthorizer) turns on sluice's built-in ACL authorizer, which decides as Kafka 4.4's StandardAuthorizer from the ACLs in the metadata log (super.users, allow.everyone.if.no.acl.found); empty: none, everyone may do everything and the ACL APIs answer SECURITY_DISABLED. Any other class is refused at start: sluice cannot load a Java plugin.", validAuthorizer),
	bk("connection.failed.authentication.delay.ms", TypeInt, v("100"), ro, "How long a failed SASL login's SASL_AUTHENTICATION_FAILED answer is held before the connection closes, slowing password guessing.", atLeast(0)),
	bk("connections.max.reauth.ms", TypeLong, v("0"), ro, "Longest a SASL session lasts before the client must re-authenticate (KIP-368); 0: forever. A connection that has not re-authenticated by then is closed at its next request.", atLeast(0)),
	bk("early.start.listeners", TypeList, nil, ro, "Listeners started before the authorizer has loaded its ACLs.").inert("sluice starts every listener at once; until the node has applied its metadata log, where the ACLs are, the authorizer holds each check (up to 15 s) instead of keeping listeners closed, so no listener needs starting early"),
	bk("principal.builder.class", TypeClass, v("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"), pb, "Plugin class building a connection's principal from its TLS or SASL identity; sluice builds principals as Kafka's default DefaultKafkaPrincipalBuilder does.").later(0, whyJavaPlugin),
	bk("security.providers", TypeString, nil, ro, "Java security providers for TLS and SASL algorithms.").later(0, "TLS and SASL"),
	// Quota windows: client quotas (issue 18) and the replication throttle.
	bk("alter.log.dirs.replication.quota.window.num", TypeInt, v("11"), ro, "Samples replica.alter.log.dirs.io.max.bytes.per.second (the throttle of replica moves between this broker's log dirs) is measured over: the rate is the bytes copied in the samples over the time since the oldest began, at least alter.log.dirs.replication.quota.window.num-1 windows.", atLeast(1)),
	bk("alter.log.dirs.replication.quota.window.size.seconds", TypeInt, v("1"), ro, "Seconds each sample of the replica.alter.log.dirs.io.max.bytes.per.second rate spans.", atLeast(1)),
	bk("client.quota.callback.class", TypeClass, nil, ro, "Plugin class computing client quotas.").later(0, whyJavaPlugin),
	bk("replication.quota.window.num", TypeInt, v("11"), ro, "Quota measurement: samples kept and seconds per sample.").later(0, whyReplicationWindow),
	bk("replication.quota.window.size.seconds", TypeInt, v("1"), ro, "Quota measurement: samples kept and seconds per sample.").later(0, whyReplicationWindow),
	// The share-group dead-letter queue (KIP-1191): issue 20.
	bk("errors.deadletterqueue.auto.create.topics.enable", TypeBoolean, v("false"), cw, "Whether a share group's dead-letter queue topic (errors.deadletterqueue.topic.name, KIP-1191) that does not exist is created at its first dead-letter write, with num.partitions, default.replication.factor and errors.deadletterqueue.group.enable=true, instead of the write being refused (its records archived without a DLQ record). The name must still start with errors.deadletterqueue.topic.name.prefix."),
	bk("errors.deadletterqueue.topic.name.prefix", TypeString, v("dlq."), cw, "The required prefix of share groups' dead-letter queue topic names (KIP-1191); \"\" allows any name."),
	// Streams groups (KIP-1071): issue 20.
	bk("group.streams.topology.description.plugin.class", TypeClass, nil, ro, "Plugin class (KIP-1331) to which the coordinator hands the topology descriptions of streams groups, asking members for them (TopologyDescriptionRequired) and serving them in StreamsGroupDescribe v1. Without one, as here, no member is asked; sluice keeps a description a member sends anyway in the coordinator's memory.").later(0, whyJavaPlugin),
	// Batched consumer group assignment (Kafka 4.4).
	bk("group.consumer.assignment.interval.ms", TypeInt, v("1000"), cw, "Consumer group assignment interval (Kafka 4.4's batched assignment).").later(0, "batched consumer group assignment"),
	bk("group.consumer.max.assignment.interval.ms", TypeInt, v("15000"), ro, "Consumer group assignment interval (Kafka 4.4's batched assignment).").later(0, "batched consumer group assignment"),
	bk("group.consumer.min.assignment.interval.ms", TypeInt, v("0"), ro, "Consumer group assignment interval (Kafka 4.4's batched assignment).").later(0, "batched consumer group assignment"),
	// Transactions: issue 20.
	bk("transaction.two.phase.commit.enable", TypeBoolean, v("false"), ro, "Allow two-phase commit transactions (KIP-939, as far as Kafka 4.4 builds it): an InitProducerId v6 with Enable2Pc gets a transaction no timeout aborts (timeout 2147483647, written to __transaction_state), its principal needing TWO_PHASE_COMMIT on the transactional id besides WRITE. With false such a request is TRANSACTIONAL_ID_AUTHORIZATION_FAILED. InitProducerId v6 is listed in ApiVersions only when this is true (Kafka 4.4 lists it only with its internal unstable.api.versions.enable); KeepPreparedTxn is UNSUPPORTED_VERSION, as in Kafka 4.4."),
	// Several log dirs per broker (JBOD, KIP-858): issue 20; cordoning them
	// (KIP-1066) is not in its text and has no issue yet.
	bk("cordoned.log.dirs", TypeList, v(""), pb, "Log dirs that receive no new replicas (KIP-1066).").later(0, "cordoning log dirs (KIP-1066)"),
	bk("log.dir.failure.timeout.ms", TypeLong, v("30000"), ro, "How long the controller may take to acknowledge a log dir of this broker that failed while running (the heartbeat reporting it, written into the metadata): past it the broker shuts itself down, as Kafka's does, and the binary exits with an error.", atLeast(1)),
	bk("num.replica.alter.log.dirs.threads", TypeInt, nil, ro, "Most replica moves between this broker's log dirs (AlterReplicaLogDirs) copying at once; the others wait their turn. Default (none): the number of log dirs, as Kafka's one thread per log dir.", atLeast(1)),
	// Tiered storage (KIP-405): no issue filed yet.
	bk("follower.fetch.last.tiered.offset.enable", TypeBoolean, v("false"), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("log.local.retention.bytes", TypeLong, v("-2"), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("log.local.retention.ms", TypeLong, v("-2"), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("log.remote.copy.lag.bytes", TypeLong, v("-1"), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("log.remote.copy.lag.ms", TypeLong, v("0"), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.fetch.max.wait.ms", TypeInt, v("500"), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.list.offsets.request.timeout.ms", TypeLong, v("30000"), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.index.file.cache.total.size.bytes", TypeLong, v("1073741824"), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.manager.copier.thread.pool.size", TypeInt, v("10"), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.manager.copy.max.bytes.per.second", TypeLong, v(maxInt64), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.manager.copy.quota.window.num", TypeInt, v("11"), ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.manager.copy.quota.window.size.seconds", TypeInt, v("1"), ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.manager.expiration.thread.pool.size", TypeInt, v("10"), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.manager.fetch.max.bytes.per.second", TypeLong, v(maxInt64), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.manager.fetch.quota.window.num", TypeInt, v("11"), ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.manager.fetch.quota.window.size.seconds", TypeInt, v("1"), ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.manager.follower.thread.pool.size", TypeInt, v("2"), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.manager.task.interval.ms", TypeLong, v("30000"), ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.manager.thread.pool.size", TypeInt, v("2"), ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.metadata.custom.metadata.max.bytes", TypeInt, v("128"), ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.metadata.manager.class.name", TypeString, v("org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"), ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.metadata.manager.class.path", TypeString, nil, ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.metadata.manager.impl.prefix", TypeString, v("rlmm.config."), ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.metadata.manager.listener.name", TypeString, nil, ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.reader.max.pending.tasks", TypeInt, v("100"), ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.reader.threads", TypeInt, v("10"), cw, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.storage.manager.class.name", TypeString, nil, ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.storage.manager.class.path", TypeString, nil, ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.storage.manager.impl.prefix", TypeString, v("rsm.config."), ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	bk("remote.log.storage.system.enable", TypeBoolean, v("false"), ro, "Tiered storage (KIP-405) setting.").later(0, "tiered storage (KIP-405)"),
	// Metrics reporters and Kafka's metric sensors. Reporters are Java
	// plugin classes (sluice's metrics are on metrics.listener, issue
	// 21); the sampling keys govern Kafka's windowed sensors (rates and
	// averages over metrics.num.samples windows of
	// metrics.sample.window.ms), which sluice does not compute: it
	// exposes counters and histograms, and Prometheus takes the rates.
	bk("kafka.metrics.polling.interval.secs", TypeInt, v("10"), ro, "Polling interval of the kafka.metrics.reporters plugins.").later(0, whyYammerPolling),
	bk("kafka.metrics.reporters", TypeList, v(""), ro, "Yammer metrics reporter classes.").later(0, whyJavaPlugin),
	bk("metric.reporters", TypeList, v("org.apache.kafka.common.metrics.JmxReporter"), cw, "Metrics reporter classes; sluice has no JMX, its metrics are on metrics.listener.").later(0, whyJavaPlugin),
	bk("metrics.num.samples", TypeInt, v("2"), ro, "Samples a windowed metric sensor keeps.").later(0, whySensorWindows),
	bk("metrics.recording.level", TypeString, v("INFO"), ro, "Highest recording level of the metric sensors recorded.").later(0, whyRecordingLevel),
	bk("metrics.sample.window.ms", TypeLong, v("30000"), ro, "Length of one sample window of a windowed metric sensor.").later(0, whySensorWindows),
	// Java plugin classes.
	bk("alter.config.policy.class.name", TypeClass, nil, ro, "Plugin class checking AlterConfigs requests.").later(0, whyJavaPlugin),
	bk("config.providers", TypeList, v(""), cw, "ConfigProvider plugins resolving indirect values such as ${file:...} in the config.").later(0, whyJavaPlugin),
	bk("create.topic.policy.class.name", TypeClass, nil, ro, "Plugin class checking CreateTopics requests.").later(0, whyJavaPlugin),
	bk("replica.selector.class", TypeString, nil, ro, "Plugin class choosing the replica a consumer fetches from (KIP-392).").later(0, whyJavaPlugin),
	// Other keys sluice does not act on yet.
	bk("max.decompressed.message.bytes", TypeInt, v("2147483639"), cw, "Largest decompressed size of a record batch the broker accepts.").later(0, "a limit on the decompressed size of a batch"),
	bk("max.request.partition.size.limit", TypeInt, v("2000"), ro, "Most partitions a DescribeTopicPartitions response holds.").later(0, "a configurable DescribeTopicPartitions limit; sluice answers at most 2000 partitions, Kafka's default"),
	bk("replica.socket.receive.buffer.bytes", TypeInt, v("65536"), ro, "SO_RCVBUF of follower fetch sockets.").later(0, "SO_RCVBUF on follower fetch sockets"),
	bk("socket.connection.setup.timeout.max.ms", TypeLong, v("30000"), ro, "Longest wait for a connection to another broker, after backoff.").later(0, "connection setup timeouts between brokers"),
	bk("socket.connection.setup.timeout.ms", TypeLong, v("10000"), ro, "Time to wait for a connection to another broker to be set up.").later(0, "connection setup timeouts between brokers"),
}
