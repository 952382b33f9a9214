-- Bicycle, fastest: the stock bicycle profile (weight 'duration').
local Wrap = require('rs_wrap')
return Wrap.profile('bicycle', {})
