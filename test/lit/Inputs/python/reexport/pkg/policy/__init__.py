from pkg.policy.sac import SACPolicy
