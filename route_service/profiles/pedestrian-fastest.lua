-- Pedestrian, fastest: the stock foot profile (weight 'duration').
local Wrap = require('rs_wrap')
return Wrap.profile('foot', {})
